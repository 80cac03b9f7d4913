"""Git sources: a shallow clone per repository, brought up to date before each scan.

Git runs with ``GIT_TERMINAL_PROMPT=0``, no stdin and no controlling terminal, so
it fails instead of waiting for credentials (credential helpers and ssh agents
still work), under a timeout, and with C locale messages.
Its errors become ``SourceError`` naming the URL with any password masked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from rag.errors import SourceError

NETWORK_TIMEOUT_S = 600  # clone/fetch of a large repository over a slow link
LOCAL_TIMEOUT_S = 60


def sync_git_source(url: str, dest: Path, *, branch: str | None = None) -> str:
    """Make ``dest`` a shallow checkout of ``branch`` (default: the remote's HEAD) of ``url``.

    Clones into ``dest`` when it is missing or an empty folder. When ``dest`` is
    already a clone of ``url``, fetches the latest commit of the branch and
    hard-resets to it, then removes untracked files: the clone belongs to
    local-rag, and local edits in it are discarded. Returns the commit sha
    checked out.
    """
    if branch is not None and (not branch or branch.startswith("-")):
        raise SourceError(f"invalid branch name {branch!r} for {mask_url(url)}")
    dest = Path(dest)
    if dest.exists() and not _is_empty_dir(dest):
        _check_is_clone_of(dest, url)
        _update(dest, url, branch)
        return _run_git(["rev-parse", "HEAD"], url, cwd=dest).strip()
    created = not dest.exists()
    try:
        _clone(url, dest, branch)
        sha = _query_git(["rev-parse", "--verify", "-q", "HEAD"], url, dest)
        if not sha:  # git clones a repository whose HEAD names a missing branch, checking out nothing
            raise SourceError(_missing_head(url))
    except BaseException:
        _remove_failed_clone(dest, created)  # a failed clone leaves nothing behind
        raise
    return sha


def _missing_head(url: str) -> str:
    return (f"the default branch (HEAD) of {mask_url(url)} names a branch that does not exist; "
            "pass --branch NAME (rag index --git URL --branch NAME)")


def _remove_failed_clone(dest: Path, created: bool) -> None:
    if created:
        shutil.rmtree(dest, ignore_errors=True)
    elif dest.is_dir():  # an empty folder the user gave: empty again
        for entry in dest.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def _clone(url: str, dest: Path, branch: str | None) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    branch_args = ["--branch", branch] if branch is not None else []
    _run_git(
        ["clone", "--depth", "1", "--single-branch", *branch_args, "--", url, str(dest)],
        url,
        timeout=NETWORK_TIMEOUT_S,
    )


def _check_is_clone_of(dest: Path, url: str) -> None:
    top_level = _query_git(["rev-parse", "--show-toplevel"], url, dest) if dest.is_dir() else None
    if top_level is None or Path(top_level).resolve() != dest.resolve():
        raise SourceError(
            f"{dest} exists but is not a git clone; delete it or choose another folder "
            f"for {mask_url(url)}"
        )
    origin = _query_git(["remote", "get-url", "origin"], url, dest)
    if origin != url:
        shown = mask_url(origin) if origin else "no origin remote"
        raise SourceError(
            f"{dest} is a clone of {shown}, not {mask_url(url)}; delete it "
            f"(local-rag will clone again) or choose another folder"
        )


def _update(dest: Path, url: str, branch: str | None) -> None:
    ref = branch if branch is not None else "HEAD"
    try:
        _run_git(["fetch", "--depth", "1", "origin", ref], url, cwd=dest, timeout=NETWORK_TIMEOUT_S)
    except SourceError as exc:
        if branch is None and "couldn't find remote ref HEAD" in str(exc):
            raise SourceError(_missing_head(url)) from None
        raise
    _run_git(["reset", "--hard", "FETCH_HEAD"], url, cwd=dest)
    _run_git(["clean", "-ffdx"], url, cwd=dest)


def _run_git(
    args: list[str], url: str, *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT_S
) -> str:
    """stdout of a git command; a failure becomes a SourceError with git's message."""
    completed = _spawn_git(args, url, cwd, timeout)
    if completed.returncode != 0:
        message = mask_url(first_error_line(completed.stderr))
        raise SourceError(f"git {args[0]} of {mask_url(url)} failed: {message}")
    return completed.stdout


def _query_git(args: list[str], url: str, cwd: Path) -> str | None:
    """stdout of a git query, or None if git says no (not a repository, no such remote)."""
    completed = _spawn_git(args, url, cwd, LOCAL_TIMEOUT_S)
    return completed.stdout.strip() if completed.returncode == 0 else None


def _spawn_git(
    args: list[str], url: str, cwd: Path | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            # No controlling terminal: ssh cannot ask for a passphrase or a host key.
            start_new_session=True,
        )
    except FileNotFoundError as e:
        raise SourceError("git is not installed or not on PATH; install git") from e
    except subprocess.TimeoutExpired as e:
        raise SourceError(
            f"git {args[0]} of {mask_url(url)} timed out after {timeout:.0f} s; "
            "check the URL and your network"
        ) from e


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"  # messages in English, as first_error_line expects
    return env


def first_error_line(stderr: str) -> str:
    """git's most telling stderr line: the first "fatal:"/"error:" one, else the first."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        for prefix in ("fatal:", "error:"):
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
    return lines[0] if lines else "no error message from git"


_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")


def mask_url(text: str) -> str:
    """Hide credentials in URLs: the password, or a lone user name in http(s) URLs.

    ``https://user:token@host`` -> ``https://user:***@host``; a lone http(s) user
    name is usually a token (``https://<token>@github.com``) -> ``https://***@host``;
    ``ssh://git@host`` is left alone.
    """

    def mask(match: re.Match[str]) -> str:
        scheme, userinfo = match["scheme"], match["userinfo"]
        user, colon, _password = userinfo.partition(":")
        if colon:
            return f"{scheme}{user}:***@"
        if scheme.lower().startswith("http"):
            return f"{scheme}***@"
        return match.group(0)

    return _URL_USERINFO.sub(mask, text)
