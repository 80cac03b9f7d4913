"""Pathological YAML in a config file (#42.20): a self-referring alias, a billion laughs and a
key given twice are each one line naming the place, at once, never a traceback or a hang."""

from pathlib import Path

import pytest
from helpers import rag_process

from rag.config import parse_config_file
from rag.errors import ConfigError

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))


@pytest.mark.parametrize(("text", "message"), [
    ("a: &a [*a]\n", "invalid YAML at line 1, column 4: an alias refers to a node that holds it"),
    (LAUGHS, "invalid YAML at line 5, column 4: aliases expand to more than 10,000 values"),
    ("search:\n  finalTopK: 5\nembeddings: {provider: none}\nsearch:\n  finalTopK: 7\n",
     "invalid YAML at line 4, column 1: duplicate key 'search' (first at line 1)"),
    ("search: {finalTopK: 5, perFile: 2, finalTopK: 6}\n",
     "invalid YAML at line 1, column 36: duplicate key 'finalTopK' (first at line 1)"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "invalid YAML: nested too deeply"),
    # #56: a huge mapping with no alias in it was blamed on aliases
    ("".join(f"k{i}: {i}\n" for i in range(20_000)),
     "invalid YAML at line 1, column 1: the file holds more than 10,000 values; a config needs far fewer"),
])
def test_pathological_yaml_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as raised:
        parse_config_file(cfg)
    assert str(raised.value).startswith(f"{cfg}: {message}")


def test_aliases_and_merge_keys_within_bounds_still_work(tmp_path: Path) -> None:
    cfg = tmp_path / "ok.yaml"
    cfg.write_text("x-defaults: &d {finalTopK: 5, perFile: 2}\nsearch:\n  <<: *d\n  finalTopK: 7\n")
    with pytest.raises(ConfigError, match="x-defaults: unknown key"):  # aliases parse; the schema judges
        parse_config_file(cfg)
    cfg.write_text("search: &s {finalTopK: 5}\n")
    assert parse_config_file(cfg).search.final_top_k == 5


@pytest.mark.parametrize("text", ["a: &a [*a]\n", LAUGHS, "search: {}\nsearch: {}\n"])
def test_the_cli_says_it_in_one_line(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    done = rag_process("--config", str(cfg), "status", timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"error: {cfg}: invalid YAML at line ") and done.stderr.count("\n") == 1
