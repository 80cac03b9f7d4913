"""A change of a class's bases alone re-resolves the calls that reach members
through them, in files that did not change: self.greet()/this.greet()/l.Greet()
in a subclass (or embedder) of Mid and m.greet() with m typed Mid, when only
Mid's file changes."""

from collections.abc import Callable

import pytest
from graphdb import Graph

PYTHON = {
    "tree/base.py": "class Base:\n    def greet(self):\n        return 1\n",
    "tree/other.py": "class Other:\n    def greet(self):\n        return 2\n",
    "tree/mid.py": "from .base import Base\nfrom .other import Other\n\n\nclass Mid(Base):\n    pass\n",
    "tree/leaf.py": "from .mid import Mid\n\n\nclass Leaf(Mid):\n    def run(self):\n        return self.greet()\n"
                    "\n\ndef use(m: Mid):\n    return m.greet()\n",
}
TYPESCRIPT = {
    "src/tree/base.ts": "export class Base {\n  greet() {\n    return 1;\n  }\n}\n",
    "src/tree/other.ts": "export class Other {\n  greet() {\n    return 2;\n  }\n}\n",
    "src/tree/mid.ts": "import { Base } from './base';\nimport { Other } from './other';\n\n"
                       "export class Mid extends Base {}\n",
    "src/tree/leaf.ts": "import { Mid } from './mid';\n\nexport class Leaf extends Mid {\n  run() {\n"
                        "    return this.greet();\n  }\n}\n\nexport function use(m: Mid) {\n  return m.greet();\n}\n",
}

GO = {  # (one package: the bases are found in the folder, their methods in other files of it)
    "tree/base.go": "package tree\n\ntype Base struct{}\n",
    "tree/other.go": "package tree\n\ntype Other struct{}\n",
    "tree/greet.go": "package tree\n\nfunc (b *Base) Greet() int {\n\treturn 1\n}\n\n"
                     "func (o *Other) Greet() int {\n\treturn 2\n}\n",
    "tree/mid.go": "package tree\n\ntype Mid struct {\n\tBase\n}\n",
    "tree/leaf.go": "package tree\n\ntype Leaf struct {\n\tMid\n}\n\nfunc (l *Leaf) Run() int {\n"
                    "\treturn l.Greet()\n}\n\nfunc use(m Mid) int {\n\treturn m.Greet()\n}\n",
}


@pytest.mark.parametrize(
    # (the leaf's file, the name and lines of its two calls; Mid's bases edited to Other, then to none)
    ("project", "files", "calls", "to_other", "no_base"),
    [
        ("python", PYTHON, ("tree/leaf.py", "greet", 6, 10), ("Mid(Base)", "Mid(Other)"), ("Mid(Other)", "Mid")),
        ("typescript", TYPESCRIPT, ("src/tree/leaf.ts", "greet", 5, 10), ("extends Base", "extends Other"),
         ("Mid extends Other", "Mid")),
        ("go", GO, ("tree/leaf.go", "Greet", 8, 12), ("\tBase", "\tOther"), ("struct {\n\tOther\n}", "struct {\n}")),
    ],
)
def test_a_change_of_a_classs_bases_re_resolves_the_calls_through_them(
    graph_of: Callable[[str], Graph], project: str, files: dict[str, str], calls: tuple[str, str, int, int],
    to_other: tuple[str, str], no_base: tuple[str, str],
) -> None:
    made = graph_of(project)
    for path, text in files.items():
        (made.root / path).parent.mkdir(parents=True, exist_ok=True)
        (made.root / path).write_text(text)
    leaf, greet, *lines = calls
    mid = made.root / next(path for path in files if "/mid." in path)
    base, other = f"Base.{greet}", f"Other.{greet}"

    def change(old: str, new: str) -> list[tuple[str, str | None]]:
        mid.write_text(mid.read_text().replace(old, new))
        made.index()
        return made.outcomes(leaf, greet, *lines)

    made.index()
    assert made.outcomes(leaf, greet, *lines) == [("resolved", base)] * 2
    assert change(*to_other) == [("resolved", other)] * 2
    assert change(*no_base) == [("unresolved", None)] * 2
    assert change(*reversed(no_base)) == [("resolved", other)] * 2
    mid.unlink()
    made.index()
    assert made.outcomes(leaf, greet, *lines) == [("unresolved", None)] * 2


@pytest.mark.parametrize(
    # (the files, the re-exporting module and its edit, the leaf's call, where it leads before and after)
    ("project", "files", "barrel", "edit", "call", "targets"),
    [
        ("python", {
            "pkg/a.py": "class Base:\n    def greet(self):\n        return 1\n",
            "pkg/b.py": "class Base:\n    def greet(self):\n        return 2\n",
            "pkg/__init__.py": "from .a import Base\n",
            "leaf.py": "from pkg import Base\n\n\nclass Leaf(Base):\n    def run(self):\n        return self.greet()\n",
        }, "pkg/__init__.py", (".a import", ".b import"), ("leaf.py", "greet"), ("pkg/a.py", "pkg/b.py")),
        ("typescript", {
            "src/pkg/a.ts": "export class Base {\n  greet() {\n    return 1;\n  }\n}\n",
            "src/pkg/b.ts": "export class Base {\n  greet() {\n    return 2;\n  }\n}\n",
            "src/pkg/index.ts": "export { Base } from './a';\n",
            "src/leaf.ts": "import { Base } from './pkg';\n\nexport class Leaf extends Base {\n  run() {\n"
                           "    return this.greet();\n  }\n}\n",
        }, "src/pkg/index.ts", ("'./a'", "'./b'"), ("src/leaf.ts", "greet"), ("src/pkg/a.ts", "src/pkg/b.ts")),
    ],
)
def test_a_re_export_that_changes_a_base_re_resolves_the_calls_through_it(
    graph_of: Callable[[str], Graph], project: str, files: dict[str, str], barrel: str,
    edit: tuple[str, str], call: tuple[str, str], targets: tuple[str, str],
) -> None:
    """Only the package's re-export changes: Leaf's base is now b's Base, and so is self.greet()."""
    made = graph_of(project)
    for path, text in files.items():
        (made.root / path).parent.mkdir(parents=True, exist_ok=True)
        (made.root / path).write_text(text)
    made.index()
    assert made.ref(*call)["target_path"] == targets[0]
    (made.root / barrel).write_text(files[barrel].replace(*edit))
    made.index()
    assert made.ref(*call)["target_path"] == targets[1]
