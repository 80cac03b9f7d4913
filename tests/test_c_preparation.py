"""C text prepared for its grammar: one branch of each conditional, attribute macros blanked,
every line and offset kept."""

from rag.languages.c_family.attribute_macros import blank_attribute_macros
from rag.languages.c_family.preprocessor import first_branches

SOURCE = """#ifndef RING_H
#  define RING_H
int f(void)
{
#if defined(A) && \\
    defined(B)
  return 1;
#elif defined(C)
  return 2;
#else
#  if D
  return 3;
#  endif
#endif
}
#endif
"""


def test_only_the_first_branch_of_each_conditional_is_left() -> None:
    prepared = first_branches(SOURCE)
    assert len(prepared) == len(SOURCE) and prepared.count("\n") == SOURCE.count("\n")
    kept = [line.strip() for line in prepared.splitlines() if line.strip()]
    assert kept == ["#  define RING_H", "int f(void)", "{", "return 1;", "}"]


def test_unbalanced_directives_do_not_fail() -> None:
    assert first_branches("#endif\nint x;\n#else\n") == "      \nint x;\n     \n"
    assert first_branches("int x;\n") == "int x;\n"


def test_attribute_macros_before_a_declaration_are_blanked() -> None:
    text = "LZ4_FORCE_INLINE int\nLZ4_decode(const char* s)\nstatic API_A API_B void g(void);\nU32 XXH32(int x);\n"
    blanked = blank_attribute_macros(text)
    assert len(blanked) == len(text)
    assert blanked.splitlines() == ["                 int", "LZ4_decode(const char* s)",
                                    "static             void g(void);", "U32 XXH32(int x);"]
