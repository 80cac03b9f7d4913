"""read_regular_file: what replaced a scanned file is refused at once, never waited on."""

import os
import threading
from pathlib import Path

import pytest

from rag.sources.reading import read_regular_file


def test_reads_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    assert read_regular_file(tmp_path / "a.py") == b"x = 1\n"


def test_a_fifo_swapped_in_fails_at_once_instead_of_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a.py")
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(read_regular_file(tmp_path / "a.py"))
        except OSError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    [error] = outcome
    assert isinstance(error, OSError)
    assert error.strerror == "no longer a regular file (replaced since the scan)"


@pytest.mark.parametrize("kind", ["symlink", "directory", "gone"])
def test_other_replacements_fail_with_an_oserror(tmp_path: Path, kind: str) -> None:
    (tmp_path / "real.py").write_bytes(b"x")
    path = tmp_path / "a.py"
    if kind == "symlink":
        path.symlink_to(tmp_path / "real.py")
    elif kind == "directory":
        path.mkdir()
    with pytest.raises(OSError):
        read_regular_file(path)


def test_an_ignore_file_may_be_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "shared-ignore").write_bytes(b"*.log\n")
    (tmp_path / ".gitignore").symlink_to(tmp_path / "shared-ignore")
    assert read_regular_file(tmp_path / ".gitignore", follow_symlinks=True) == b"*.log\n"
