"""scan_source: which files are kept, and the reason every other path is skipped."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rag.errors import SourceError
from rag.sources.scan import ScanResult, looks_binary, scan_source

Tree = dict[str, str | bytes]


def make_tree(root: Path, tree: Tree) -> None:
    for rel_path, content in tree.items():
        path = root / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def kept(result: ScanResult) -> set[str]:
    return {f.path for f in result.files}


def reason_of(result: ScanResult, path: str) -> str | None:
    for reason, paths in result.skipped.items():
        if path in paths:
            return reason
    return None


# Each case: a tree, scan options, the files kept, and reasons for some skipped paths.
CASES: list[tuple[str, Tree, dict[str, Any], set[str], dict[str, str]]] = [
    (
        "builtin directories and files",
        {
            "main.py": "",
            ".git/config": "",
            ".hg/store": "",
            "node_modules/left-pad/index.js": "",
            "web/node_modules/x.js": "",
            ".venv/lib/site.py": "",
            "env/pyvenv.cfg": "",
            "env/lib/site.py": "",
            "tools-env/pyvenv.cfg": "",
            "pkg/__pycache__/a.cpython-311.pyc": "",
            ".mypy_cache/x.json": "",
            ".pytest_cache/README.md": "",
            ".ruff_cache/x": "",
            ".tox/py311/x.py": "",
            "__pypackages__/3.11/lib/x.py": "",
            "mypkg.egg-info/PKG-INFO": "",
            "package-lock.json": "{}",
            "poetry.lock": "",
            "go.sum": "",
            "static/app.min.js": "",
            "static/app.min.css": "",
            "static/app.js.map": "",
            "static/app.js": "",
            ".env": "SECRET=1",
            ".env.local": "SECRET=1",
            ".env.example": "SECRET=",
        },
        {},
        {"main.py", "static/app.js", ".env.example"},
        {
            ".git/": "builtin",
            ".hg/": "builtin",
            "node_modules/": "builtin",
            "web/node_modules/": "builtin",
            ".venv/": "builtin",
            "env/": "builtin",
            "tools-env/": "builtin",
            "pkg/__pycache__/": "builtin",
            "mypkg.egg-info/": "builtin",
            "package-lock.json": "builtin",
            "go.sum": "builtin",
            "static/app.min.js": "builtin",
            "static/app.js.map": "builtin",
            ".env": "secret",
            ".env.local": "secret",
        },
    ),
    (
        "build outputs only next to a manifest",
        {
            "py/pyproject.toml": "",
            "py/build/lib/x.py": "",
            "py/dist/x.tar.gz": b"\x1f\x8b",
            "js/package.json": "{}",
            "js/dist/bundle.js": "",
            "js/build/webpack.config.js": "",
            "rs/Cargo.toml": "",
            "rs/target/debug/x.rs": "",
            "go/build/package.sh": "",
            "java/target/notes.md": "",
            "out/report.md": "",
        },
        {},
        {
            "py/pyproject.toml",
            "js/package.json",
            "js/build/webpack.config.js",
            "rs/Cargo.toml",
            "go/build/package.sh",
            "java/target/notes.md",
            "out/report.md",
        },
        {
            "py/build/": "builtin",
            "py/dist/": "builtin",
            "js/dist/": "builtin",
            "rs/target/": "builtin",
        },
    ),
    (
        "nested .gitignore with negation",
        {
            ".gitignore": "*.log\n!keep.log\n",
            "a.log": "",
            "keep.log": "",
            "notes.txt": "",
            "sub/.gitignore": "!debug.log\n*.txt\n",
            "sub/debug.log": "",
            "sub/other.log": "",
            "sub/x.txt": "",
            "sub/deeper/y.txt": "",
            "sub/deeper/keep.log": "",
        },
        {},
        {".gitignore", "keep.log", "notes.txt", "sub/.gitignore", "sub/debug.log", "sub/deeper/keep.log"},
        {
            "a.log": "gitignore",
            "sub/other.log": "gitignore",
            "sub/x.txt": "gitignore",
            "sub/deeper/y.txt": "gitignore",
        },
    ),
    (
        "directory-only patterns",
        {
            ".gitignore": "logs/\n",
            "logs/a.md": "",
            "app/logs/b.md": "",
            "other/logs": "a file named logs",
        },
        {},
        {".gitignore", "other/logs"},
        {"logs/": "gitignore", "app/logs/": "gitignore"},
    ),
    (
        "anchored patterns, also in nested files",
        {
            ".gitignore": "/top.md\nsub/x.md\n",
            "top.md": "",
            "sub/top.md": "",
            "sub/x.md": "",
            "a/sub/x.md": "",
            "nest/.gitignore": "/only.md\n",
            "nest/only.md": "",
            "nest/deeper/only.md": "",
            "only.md": "",
        },
        {},
        {
            ".gitignore",
            "sub/top.md",
            "a/sub/x.md",
            "nest/.gitignore",
            "nest/deeper/only.md",
            "only.md",
        },
        {"top.md": "gitignore", "sub/x.md": "gitignore", "nest/only.md": "gitignore"},
    ),
    (
        "double-star patterns",
        {
            ".gitignore": "a/**/z.md\n**/tmp/\n",
            "a/z.md": "",
            "a/b/c/z.md": "",
            "b/z.md": "",
            "tmp/x.md": "",
            "deep/er/tmp/x.md": "",
        },
        {},
        {".gitignore", "b/z.md"},
        {"a/z.md": "gitignore", "a/b/c/z.md": "gitignore", "deep/er/tmp/": "gitignore"},
    ),
    (
        "no re-including below an excluded directory",
        {".gitignore": "gen/\n!gen/keep.md\n", "gen/keep.md": "", "gen/other.md": ""},
        {},
        {".gitignore"},
        {"gen/": "gitignore"},
    ),
    (
        "nested file in a folder with glob characters in its name",
        {"a[1]/.gitignore": "x.md\n", "a[1]/x.md": "", "a1/x.md": "", "a[1]/y.md": ""},
        {},
        {"a[1]/.gitignore", "a1/x.md", "a[1]/y.md"},
        {"a[1]/x.md": "gitignore"},
    ),
    (
        "invalid and CRLF ignore lines",
        {".gitignore": "bad\\\r\n[z-a]\r\n*.tmp\r\n", "a.tmp": "", "b.md": ""},
        {},
        {".gitignore", "b.md"},
        {"a.tmp": "gitignore"},
    ),
    (
        ".ragignore adds exclusions and overrides .gitignore",
        {
            ".gitignore": "generated/\n*.out\n",
            ".ragignore": "drafts/\n!generated/\n!important.out\n",
            "generated/api.md": "",
            "generated/x.out": "",
            "important.out": "",
            "other.out": "",
            "drafts/d.md": "",
            "sub/.gitignore": "!other.out\nnotes.md\n",
            "sub/notes.md": "",
            "sub/.ragignore": "*.md\n!keep.md\n",
            "sub/a.md": "",
            "sub/keep.md": "",
        },
        {},
        {".gitignore", ".ragignore", "generated/api.md", "important.out", "sub/.gitignore",
         "sub/.ragignore", "sub/keep.md"},
        {
            "drafts/": "ragignore",
            "generated/x.out": "gitignore",
            "other.out": "gitignore",
            "sub/notes.md": "ragignore",
            "sub/a.md": "ragignore",
        },
    ),
    (
        ".ragignore cannot re-include built-in exclusions",
        {".ragignore": "!node_modules/\n!yarn.lock\n", "node_modules/x.js": "", "yarn.lock": ""},
        {},
        {".ragignore"},
        {"node_modules/": "builtin", "yarn.lock": "builtin"},
    ),
    (
        "include and exclude globs",
        {
            "README.md": "",
            "docs/guide/intro.md": "",
            "src/app.py": "",
            "src/vendor/lib.py": "",
            "src/schema.gen.py": "",
            "scripts/run.sh": "",
        },
        {"include": ["**/*.md", "src/**"], "exclude": ["src/vendor/", "*.gen.py"]},
        {"README.md", "docs/guide/intro.md", "src/app.py"},
        {
            "src/vendor/": "exclude",
            "src/schema.gen.py": "exclude",
            "scripts/run.sh": "not included",
        },
    ),
    (
        "empty include list restricts nothing",
        {"a.md": "", "b.py": ""},
        {"include": [], "exclude": []},
        {"a.md", "b.py"},
        {},
    ),
    (
        "size limit",
        {"small.md": "x" * 100, "exact.md": "x" * 101, "big.md": "x" * 102, "big.png": b"x" * 500},
        {"max_file_size": 101},
        {"small.md", "exact.md"},
        {"big.md": "too large", "big.png": "binary"},
    ),
    (
        "binary detection",
        {
            "data": b"header\x00\x01\x02rest",
            "blob.xyz": bytes(range(1, 32)) * 50,
            "Makefile": "all:\n\techo ok\n",
            "LICENSE": "Permission is hereby granted…\n",
            "latin1.conf.in": "caf\xe9\n".encode("latin-1"),
            "empty": b"",
            "logo.png": b"not even an image",
            "paper.pdf": b"%PDF-1.7\n\x00\x01\x02\xff binary streams",
            "letter.docx": b"PK\x03\x04\x00\x00 zip container",
        },
        {},
        {"Makefile", "LICENSE", "latin1.conf.in", "empty", "paper.pdf", "letter.docx"},
        {"data": "binary", "blob.xyz": "binary", "logo.png": "binary"},
    ),
]


@pytest.mark.parametrize(
    ("tree", "options", "expected_kept", "expected_reasons"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_scan_rules(
    tmp_path: Path,
    tree: Tree,
    options: dict[str, Any],
    expected_kept: set[str],
    expected_reasons: dict[str, str],
) -> None:
    make_tree(tmp_path, tree)
    result = scan_source(tmp_path, **options)
    assert kept(result) == expected_kept
    assert {path: reason_of(result, path) for path in expected_reasons} == expected_reasons


def test_files_are_sorted_with_stat_data_and_posix_paths(tmp_path: Path) -> None:
    make_tree(tmp_path, {"b/z.md": "zz", "a.md": "a", "b/a.md": "aaa"})
    result = scan_source(tmp_path)
    assert [f.path for f in result.files] == ["a.md", "b/a.md", "b/z.md"]
    for scanned in result.files:
        stat = os.stat(scanned.abs_path)
        assert scanned.abs_path == tmp_path.resolve() / scanned.path
        assert (scanned.size, scanned.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert result.skipped == {}


def test_skipped_paths_are_sorted_and_directories_end_with_slash(tmp_path: Path) -> None:
    make_tree(tmp_path, {"z.lock": "", "yarn.lock": "", "a/go.sum": "", "node_modules/x": ""})
    result = scan_source(tmp_path)
    assert result.skipped == {"builtin": ["a/go.sum", "node_modules/", "yarn.lock"]}


def test_known_text_files_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A no-change re-index must stay cheap: only unknown extensions are sniffed."""
    make_tree(tmp_path, {"a.py": "x = 1", "b.md": "# b", "c.pdf": b"%PDF", "d.png": b"", "e": "e"})
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str, *args: Any, **kwargs: Any) -> int:
        opened.append(os.path.basename(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    result = scan_source(tmp_path)
    assert kept(result) == {"a.py", "b.md", "c.pdf", "e"}
    assert opened == ["e"]


@pytest.mark.parametrize(
    ("sample", "binary"),
    [
        (b"", False),
        (b"plain text\n", False),
        ("unicode ✓ text".encode(), False),
        (b"\x00", True),
        (b"text with one \x00 NUL", True),
        (b"\x01\x02\x03\x04abcdef", True),
        (b"\x1b[31mcolored\x1b[0m log line\n", False),
    ],
)
def test_looks_binary(sample: bytes, binary: bool) -> None:
    assert looks_binary(sample) is binary


class TestSymlinks:
    def test_links_are_never_followed(self, tmp_path: Path) -> None:
        root, outside = tmp_path / "root", tmp_path / "outside"
        make_tree(root, {"docs/a.md": "", "real.md": ""})
        make_tree(outside, {"secret.md": ""})
        (root / "link-file.md").symlink_to(root / "real.md")
        (root / "link-dir").symlink_to(root / "docs", target_is_directory=True)
        (root / "loop").symlink_to(root, target_is_directory=True)
        (root / "out-file.md").symlink_to(outside / "secret.md")
        (root / "out-dir").symlink_to(outside, target_is_directory=True)
        (root / "dangling.md").symlink_to(root / "missing.md")

        result = scan_source(root)

        assert kept(result) == {"docs/a.md", "real.md"}
        assert result.skipped == {
            "broken symlink": ["dangling.md"],
            "symlink inside root": ["link-dir", "link-file.md", "loop"],
            "symlink outside root": ["out-dir", "out-file.md"],
        }

    def test_root_given_through_a_symlink(self, tmp_path: Path) -> None:
        make_tree(tmp_path / "real", {"a.md": ""})
        (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
        result = scan_source(tmp_path / "alias")
        assert kept(result) == {"a.md"}
        assert result.files[0].abs_path == (tmp_path / "real" / "a.md")


def _scan_to_lists(root: Path) -> tuple[list[str], dict[str, list[str]]]:
    result = scan_source(root)
    return [f.path for f in result.files], result.skipped


def _scan_as_nobody(root: Path) -> tuple[list[str], dict[str, list[str]]]:
    """Scan in a forked child that dropped root privileges; the result comes back through a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            with os.fdopen(write_end, "w") as out:
                json.dump(_scan_to_lists(root), out)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as result:
        payload = result.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0, "the unprivileged scan failed"
    files, skipped = json.loads(payload)
    return files, skipped


class TestUnreadable:
    def test_permissions(self) -> None:
        """Real permission bits; as root (who reads everything) the scan runs as nobody."""
        root = Path(tempfile.mkdtemp(prefix="rag-perm-"))
        try:
            root.chmod(0o755)
            make_tree(root, {"locked/a.md": "", "secret": "s", "closed.md": "", "ok.md": ""})
            for name in ("locked", "secret", "closed.md"):
                (root / name).chmod(0)
            files, skipped = _scan_as_nobody(root) if os.geteuid() == 0 else _scan_to_lists(root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        assert files == ["ok.md"]
        assert skipped == {"unreadable": ["closed.md", "locked/", "secret"]}

    def test_sniffed_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        make_tree(tmp_path, {"secret": "s", "ok.md": ""})

        def denied(path: str, *args: Any, **kwargs: Any) -> int:
            raise PermissionError(13, "Permission denied", path)

        monkeypatch.setattr(os, "open", denied)
        result = scan_source(tmp_path)
        assert kept(result) == {"ok.md"}
        assert result.skipped == {"unreadable": ["secret"]}

    def test_known_text_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        make_tree(tmp_path, {"closed.md": "", "ok.md": ""})
        real_access = os.access
        monkeypatch.setattr(
            os, "access", lambda path, mode: not str(path).endswith("closed.md")
            and real_access(path, mode)
        )
        result = scan_source(tmp_path)
        assert kept(result) == {"ok.md"}
        assert result.skipped == {"unreadable": ["closed.md"]}

    def test_directory(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        make_tree(tmp_path, {"locked/a.md": "", "ok.md": ""})
        real_scandir = os.scandir

        def scandir(path: Any) -> Any:
            if str(path).endswith("locked"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", scandir)
        result = scan_source(tmp_path)
        assert kept(result) == {"ok.md"}
        assert result.skipped == {"unreadable": ["locked/"]}

    def test_unreadable_ignore_file_is_no_ignore_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        make_tree(tmp_path, {".gitignore": "*.md\n", "a.md": ""})
        monkeypatch.setattr("builtins.open", _raise_permission_error)
        assert kept(scan_source(tmp_path)) == {".gitignore", "a.md"}


def _raise_permission_error(*args: Any, **kwargs: Any) -> Any:
    raise PermissionError(13, "Permission denied")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.md": ""})
    os.mkfifo(tmp_path / "pipe")
    result = scan_source(tmp_path)
    assert kept(result) == {"a.md"}
    assert result.skipped == {"not a regular file": ["pipe"]}


@pytest.mark.parametrize(
    ("make_root", "message"),
    [
        (lambda tmp: tmp / "missing", "does not exist"),
        (lambda tmp: (tmp / "file.md").touch() or tmp / "file.md", "is not a folder"),
    ],
    ids=["missing", "file"],
)
def test_bad_root_is_a_source_error(tmp_path: Path, make_root: Any, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        scan_source(make_root(tmp_path))


@pytest.mark.parametrize("option", ["include", "exclude"])
def test_invalid_glob_is_a_source_error(tmp_path: Path, option: str) -> None:
    globs = {option: ["*.md", "src/\\"]}
    with pytest.raises(SourceError, match=rf"invalid {option} glob 'src/\\\\'"):
        scan_source(tmp_path, include=globs.get("include"), exclude=globs.get("exclude"))


# Hostile trees: one bad entry is skipped with its reason, its siblings are kept.


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(tmp_path: Path) -> None:
    os.makedirs(os.path.join(bytes(tmp_path), b"d\xff"))
    open(os.path.join(bytes(tmp_path), b"d\xff", b"x.py"), "wb").close()
    open(os.path.join(bytes(tmp_path), b"caf\xe9.py"), "wb").close()
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    result = scan_source(tmp_path)
    assert kept(result) == {"ok.py"}
    assert len(result.skipped["name not UTF-8"]) == 2
    assert {p["path"] for p in result.problems()} == {"caf\\xe9.py", "d\\xff/"}
    assert all("not valid UTF-8" in p["error"] for p in result.problems())
    json.dumps(result.problems()).encode("utf-8")  # printable anywhere


def test_a_path_over_the_key_limit_is_skipped_and_named(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(12):  # 12 x 200 bytes: over MAX_PATH_BYTES, within the OS's PATH_MAX
        deep = deep / ("d" * 199)
    deep.mkdir(parents=True)
    (deep / "long.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    result = scan_source(tmp_path)
    assert kept(result) == {"ok.py"}
    assert len(result.skipped["path too long"]) == 1
    [problem] = result.problems()
    assert "longer than 2048 bytes" in problem["error"]
    assert len(problem["path"]) < 250


def test_an_oserror_on_one_entry_skips_only_that_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "target.py").write_text("x = 1\n", encoding="utf-8")
    os.symlink("target.py", tmp_path / "exe")
    real = os.path.realpath

    def realpath_like_proc(path: Any, **kwargs: Any) -> str:
        if str(path).endswith("exe"):  # what /proc/<pid>/exe does for a vanished process
            raise FileNotFoundError(2, "No such file or directory")
        return real(path, **kwargs)

    monkeypatch.setattr(os.path, "realpath", realpath_like_proc)
    result = scan_source(tmp_path)
    assert kept(result) == {"ok.py", "target.py"}
    assert reason_of(result, "exe") == "broken symlink"


def test_proc_scans_without_an_error() -> None:
    result = scan_source(Path("/proc/self"))
    assert result.skipped  # fds, links, pseudo files: each skipped with a reason


def test_a_fifo_is_never_opened_by_the_scan(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # no extension: the scan would sniff a regular file
    (tmp_path / "ok").write_text("text\n", encoding="utf-8")
    result = scan_source(tmp_path)
    assert kept(result) == {"ok"}
    assert reason_of(result, "pipe") == "not a regular file"
