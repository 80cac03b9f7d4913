"""Control characters from indexed file names and contents never reach the terminal raw
(#42.23): text output shows them escaped; --json keeps the text as it is (JSON escapes it)."""

import json
from pathlib import Path

from helpers import rag_process

from rag import db
from rag.terminal import printable, printable_name

ESC = "\x1b"


def test_printable_escapes_controls_but_keeps_lines_and_tabs() -> None:
    assert printable("a\x1b[2Jb\tc\nd\re\x07\x9bf") == "a\\x1b[2Jb\tc\nd\\x0de\\x07\\x9bf"
    assert printable("plain — ünïcode") == "plain — ünïcode"


def test_search_read_and_list_escape_what_was_indexed(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = tmp_path / f"proj{ESC}[1m"
    root.mkdir()
    (root / f"evil{ESC}[31mred.md").write_text(f"# Title\n\nquokka {ESC}]0;pwned\x07 {ESC}[2J cleared\n")
    indexed = rag_process("index", "--path", str(root), "--name", "proj", database=rag_db)
    assert indexed.returncode == 0 and ESC not in indexed.stderr, indexed.stderr
    for args in (["search", "quokka"], ["list"], ["read", f"evil{ESC}[31mred.md"]):
        done = rag_process(*args, database=rag_db)
        assert done.returncode == 0, done.stderr
        assert ESC not in done.stdout + done.stderr and "\x07" not in done.stdout, args
        assert "\\x1b" in done.stdout + done.stderr, args
    found = rag_process("search", "quokka", "--json", database=rag_db)
    [hit] = json.loads(found.stdout)["results"]
    assert hit["path"] == f"evil{ESC}[31mred.md" and f"{ESC}[2J" in hit["snippet"]


def test_a_newline_or_a_bidi_override_in_a_file_name_is_shown_escaped(
    tmp_path: Path, rag_db: db.DatabaseTarget
) -> None:
    """#56: a newline or U+202E in a file name was printed raw (a name passing for two lines,
    or read backwards)."""
    assert printable_name("a\nb\tc\u202ed") == "a\\x0ab\\x09c\\u202ed"
    assert printable("text\u202e") == "text\\u202e" and printable("two\nlines") == "two\nlines"
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = tmp_path / "proj"
    root.mkdir()
    names = ["fake\nok.md", "invoice\u202etxt.md"]
    for name in names:
        (root / name).write_text("# Title\n\nquokka habits\n")
    indexed = rag_process("index", "--path", str(root), "--name", "proj", database=rag_db)
    assert indexed.returncode == 0, indexed.stderr
    for args in (["search", "quokka"], ["read", names[0]], ["index", "--path", str(root), "--dry-run"]):
        done = rag_process(*args, database=rag_db)
        assert done.returncode == 0, done.stderr
        shown = done.stdout + done.stderr
        assert "fake\nok" not in shown and "\u202e" not in shown, args
        assert "fake\\x0aok.md" in shown, args
