"""sync_git_source against local bare repositories standing in for remotes."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from rag.errors import SourceError
from rag.sources import git as git_module
from rag.sources.git import first_error_line, mask_url, sync_git_source

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the user's git config out, and give commits an author."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


class Upstream:
    """A bare repository (the remote) and a work repository that pushes to it."""

    def __init__(self, root: Path) -> None:
        self.bare = root / "remote.git"
        self.work = root / "work"
        git("init", "-q", "--bare", "--initial-branch=main", str(self.bare), cwd=root)
        git("init", "-q", "--initial-branch=main", str(self.work), cwd=root)
        git("remote", "add", "origin", str(self.bare), cwd=self.work)

    def commit(self, files: dict[str, str], branch: str = "main") -> str:
        if git("branch", "--list", branch, cwd=self.work) or not self._has_commits():
            git("checkout", "-q", "-B", branch, cwd=self.work)
        else:
            git("checkout", "-q", "-b", branch, cwd=self.work)
        for rel_path, content in files.items():
            (self.work / rel_path).parent.mkdir(parents=True, exist_ok=True)
            (self.work / rel_path).write_text(content)
        git("add", "-A", cwd=self.work)
        git("commit", "-q", "-m", f"update {branch}", cwd=self.work)
        git("push", "-q", "origin", branch, cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)

    def _has_commits(self) -> bool:
        return subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=self.work, capture_output=True
        ).returncode == 0


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path)


URL_KINDS: dict[str, Callable[[Upstream], str]] = {
    "plain path": lambda up: str(up.bare),
    "file url": lambda up: up.bare.as_uri(),
}


@pytest.mark.parametrize("url_of", URL_KINDS.values(), ids=URL_KINDS.keys())
def test_first_clone_then_update(tmp_path: Path, upstream: Upstream, url_of: Callable[[Upstream], str]) -> None:
    first = upstream.commit({"README.md": "v1"})
    dest = tmp_path / "clones" / "repo"

    assert sync_git_source(url_of(upstream), dest) == first
    assert (dest / "README.md").read_text() == "v1"

    second = upstream.commit({"README.md": "v2", "docs/new.md": "new"})
    (dest / "README.md").write_text("local edit")
    (dest / "untracked.md").write_text("stray")

    assert sync_git_source(url_of(upstream), dest) == second
    assert (dest / "README.md").read_text() == "v2"
    assert (dest / "docs/new.md").exists()
    assert not (dest / "untracked.md").exists()


def test_file_url_clone_is_shallow(tmp_path: Path, upstream: Upstream) -> None:
    upstream.commit({"a.md": "1"})
    upstream.commit({"a.md": "2"})
    dest = tmp_path / "clone"
    sync_git_source(upstream.bare.as_uri(), dest)
    assert git("rev-list", "--count", "HEAD", cwd=dest) == "1"


def test_branch_other_than_default(tmp_path: Path, upstream: Upstream) -> None:
    upstream.commit({"a.md": "main"})
    dev = upstream.commit({"a.md": "dev"}, branch="dev")
    dest = tmp_path / "clone"

    assert sync_git_source(upstream.bare.as_uri(), dest, branch="dev") == dev
    assert (dest / "a.md").read_text() == "dev"

    dev2 = upstream.commit({"b.md": "more dev"}, branch="dev")
    assert sync_git_source(upstream.bare.as_uri(), dest, branch="dev") == dev2
    assert (dest / "b.md").exists()


def test_switching_branch_of_an_existing_clone(tmp_path: Path, upstream: Upstream) -> None:
    upstream.commit({"a.md": "main"})
    dev = upstream.commit({"a.md": "dev"}, branch="dev")
    dest = tmp_path / "clone"
    sync_git_source(upstream.bare.as_uri(), dest)
    assert sync_git_source(upstream.bare.as_uri(), dest, branch="dev") == dev
    assert (dest / "a.md").read_text() == "dev"


def test_existing_empty_folder_is_cloned_into(tmp_path: Path, upstream: Upstream) -> None:
    sha = upstream.commit({"a.md": "1"})
    dest = tmp_path / "empty"
    dest.mkdir()
    assert sync_git_source(str(upstream.bare), dest) == sha


@pytest.mark.parametrize("existing_clone", [False, True], ids=["clone", "update"])
def test_unknown_branch(tmp_path: Path, upstream: Upstream, existing_clone: bool) -> None:
    upstream.commit({"a.md": "1"})
    url, dest = upstream.bare.as_uri(), tmp_path / "clone"
    if existing_clone:
        sync_git_source(url, dest)
    with pytest.raises(SourceError) as error:
        sync_git_source(url, dest, branch="no-such-branch")
    message = str(error.value)
    assert url in message
    assert "no-such-branch" in message


@pytest.mark.parametrize(
    "url_of",
    [lambda tmp: str(tmp / "nothing-here"), lambda tmp: (tmp / "nothing-here.git").as_uri()],
    ids=["plain path", "file url"],
)
def test_bad_url(tmp_path: Path, url_of: Callable[[Path], str]) -> None:
    url = url_of(tmp_path)
    with pytest.raises(SourceError, match=r"git clone of .*nothing-here.* failed: .+"):
        sync_git_source(url, tmp_path / "clone")
    assert not (tmp_path / "clone").exists()


def test_credentials_are_masked_in_errors(tmp_path: Path) -> None:
    # Port 1 refuses connections at once; no prompt can appear (GIT_TERMINAL_PROMPT=0).
    url = "http://alice:s3cret@127.0.0.1:1/repo.git"
    with pytest.raises(SourceError) as error:
        sync_git_source(url, tmp_path / "clone")
    assert "s3cret" not in str(error.value)
    assert "http://alice:***@127.0.0.1:1/repo.git" in str(error.value)


def test_dest_that_is_not_a_clone(tmp_path: Path, upstream: Upstream) -> None:
    upstream.commit({"a.md": "1"})
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "notes.md").write_text("keep me")
    with pytest.raises(SourceError, match="exists but is not a git clone; delete it"):
        sync_git_source(str(upstream.bare), dest)
    assert (dest / "notes.md").read_text() == "keep me"


def test_dest_inside_another_repository_is_not_taken_for_a_clone(
    tmp_path: Path, upstream: Upstream
) -> None:
    upstream.commit({"a.md": "1"})
    dest = upstream.work / "sub"
    dest.mkdir()
    (dest / "x.md").write_text("x")
    with pytest.raises(SourceError, match="is not a git clone"):
        sync_git_source(str(upstream.bare), dest)


def test_dest_cloned_from_another_url(tmp_path: Path, upstream: Upstream) -> None:
    upstream.commit({"a.md": "1"})
    dest = tmp_path / "clone"
    sync_git_source(str(upstream.bare), dest)
    with pytest.raises(SourceError, match=r"is a clone of .*remote\.git, not .*other\.git"):
        sync_git_source(str(tmp_path / "other.git"), dest)


def test_option_like_branch_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="invalid branch name '--upload-pack=x'"):
        sync_git_source("https://example.com/r.git", tmp_path / "c", branch="--upload-pack=x")


def test_git_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(SourceError, match="git is not installed"):
        sync_git_source("https://example.com/r.git", tmp_path / "c")


def test_timeout(tmp_path: Path, upstream: Upstream, monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.commit({"a.md": "1"})
    monkeypatch.setattr(git_module, "NETWORK_TIMEOUT_S", 0.001)
    with pytest.raises(SourceError, match=r"git clone of .* timed out"):
        sync_git_source(upstream.bare.as_uri(), tmp_path / "clone")


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("https://user:token@host/r.git", "https://user:***@host/r.git"),
        ("https://ghp_abc123@github.com/o/r", "https://***@github.com/o/r"),
        ("HTTP://u:p@h", "HTTP://u:***@h"),
        ("ssh://git@host/r.git", "ssh://git@host/r.git"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("https://host/r.git", "https://host/r.git"),
        ("/local/path", "/local/path"),
        ("fatal: unable to access 'https://u:pw@h/': refused", "fatal: unable to access 'https://u:***@h/': refused"),
    ],
)
def test_mask_url(text: str, masked: str) -> None:
    assert mask_url(text) == masked


@pytest.mark.parametrize(
    ("stderr", "line"),
    [
        ("Cloning into 'x'...\nfatal: repository 'y' does not exist\n", "repository 'y' does not exist"),
        ("warning: --depth is ignored\nerror: pathspec\nfatal: later\n", "pathspec"),
        ("\n  something odd  \n", "something odd"),
        ("", "no error message from git"),
    ],
)
def test_first_error_line(stderr: str, line: str) -> None:
    assert first_error_line(stderr) == line


@pytest.mark.parametrize("existing_clone", [False, True], ids=["clone", "update"])
def test_a_head_naming_a_missing_branch_says_to_pass_branch(
    tmp_path: Path, upstream: Upstream, existing_clone: bool
) -> None:
    upstream.commit({"a.md": "1"})
    url, dest = upstream.bare.as_uri(), tmp_path / "clone"
    if existing_clone:
        sync_git_source(url, dest)
    git("symbolic-ref", "HEAD", "refs/heads/gone", cwd=upstream.bare)
    with pytest.raises(SourceError, match="names a branch that does not exist; pass --branch NAME"):
        sync_git_source(url, dest)
    assert existing_clone == dest.exists(), "a failed first clone leaves nothing behind"
    assert sync_git_source(url, dest, branch="main")


def test_a_failed_clone_into_a_given_empty_folder_leaves_it_empty(tmp_path: Path, upstream: Upstream) -> None:
    upstream.commit({"a.md": "1"})
    git("symbolic-ref", "HEAD", "refs/heads/gone", cwd=upstream.bare)
    dest = tmp_path / "empty"
    dest.mkdir()
    with pytest.raises(SourceError):
        sync_git_source(str(upstream.bare), dest)
    assert dest.is_dir() and not any(dest.iterdir())
