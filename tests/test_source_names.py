"""A source name is checked before anything touches the disk (#42.21): `--name ../victim` on a
git source clones nothing outside (or inside) $RAG_HOME and says what a name may hold."""

import subprocess
from pathlib import Path

import pytest
from helpers import rag_process

from rag import db
from rag.config import SourceSpec
from rag.errors import ConfigError

NAME_RULE = "use letters, digits, '.', '_' or '-', starting with a letter or digit"


@pytest.mark.parametrize("name", ["../victim", "..", ".hidden", "a/b", "ok\n", "", "-x"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=NAME_RULE):
        SourceSpec(name, "git", "file:///r.git")


def test_a_git_source_named_outside_its_folder_clones_nothing(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "-b", "main", str(remote)], check=True, capture_output=True)
    home = tmp_path / "raghome"
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    for args in (["--git", f"file://{remote}"], ["--path", str(tmp_path)]):
        done = rag_process("index", *args, "--name", "../victim", database=rag_db, RAG_HOME=str(home))
        assert done.returncode == 1 and done.stderr == f"error: source name '../victim': {NAME_RULE}\n"
    assert not home.exists() and not (tmp_path / "victim").exists()


def test_a_256_character_name_is_refused_for_every_kind_before_the_disk(
    tmp_path: Path, rag_db: db.DatabaseTarget
) -> None:
    """#56: a 256-character git source name ended in an OSError traceback (File name too long)."""
    name = "n" * 256
    for kind in ("git", "local", "confluence"):
        with pytest.raises(ConfigError, match="256 characters"):
            SourceSpec(name, kind, "file:///r.git")
    SourceSpec("n" * 100, "git", "file:///r.git")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "-b", "main", str(remote)], check=True, capture_output=True)
    home = tmp_path / "raghome"
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    for args in (["--git", f"file://{remote}"], ["--path", str(tmp_path)]):
        done = rag_process("index", *args, "--name", name, database=rag_db, RAG_HOME=str(home))
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith("error: source name nnnn") and "at most 100" in done.stderr
        assert len(done.stderr.splitlines()) == 1
    assert not home.exists()
    (tmp_path / "rag.config.yaml").write_text(
        f"embeddings: {{provider: none}}\nsources:\n  - {{name: {name}, type: local, path: .}}\n")
    done = rag_process("list", database=rag_db, RAG_HOME=str(home))
    assert done.returncode != 0 and "at most 100 characters" in done.stderr and "Traceback" not in done.stderr
