"""Released migrations: `migrations/RELEASED`, written by `make freeze VERSION=...` only.

A release records its version, the commit it was cut from and the sha256 of
every migration in that commit. A released migration is never edited (yoyo
knows a migration by its file name and would silently skip the edit on every
database that applied it): a change after a release is a new migration.
tests/test_db.py checks the files against the record and upgrades a database
built from the last release's commit (read with `git show`) to the working tree.

    python tests/releases.py VERSION [COMMIT]   # what `make freeze` runs
"""

import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASED = ROOT / "migrations" / "RELEASED"
HEADER = """\
# Released migrations, written by `make freeze VERSION=...` (tests/releases.py);
# never edit by hand. Each release: its version and commit, then the sha256 of
# every migration in that commit. A released migration is never changed: a fix
# is a new migration. tests/test_db.py checks the files against this record.
"""
VERSION = re.compile(r"\d+\.\d+\.\d+")


class ReleaseError(Exception):
    """A release cannot be recorded or read back; the message says what to do."""


@dataclass(frozen=True)
class Release:
    version: str
    commit: str
    migrations: dict[str, str]  # file name -> sha256


def read_releases(path: Path = RELEASED) -> list[Release]:
    """The releases recorded in ``path``, oldest first."""
    releases: list[Release] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if m := re.fullmatch(r"release (\S+) commit ([0-9a-f]{40})", line):
            releases.append(Release(m[1], m[2], {}))
        elif (m := re.fullmatch(r"  ([0-9a-f]{64})  (\S+\.sql)", line)) and releases:
            releases[-1].migrations[m[2]] = m[1]
        else:
            raise ReleaseError(f"{path}:{number}: unreadable line {line!r}; run `make freeze` instead of editing")
    return releases


def git(*args: str) -> bytes:
    """Output of a git command run in the repository; a clear error when git cannot answer."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=False)
    except FileNotFoundError:
        raise ReleaseError("git is not installed; releases are read from the repository's history") from None
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def migrations_at(commit: str) -> dict[str, bytes]:
    """The migration files of a commit, by name; an error naming the commit if history lacks it."""
    try:
        git("cat-file", "-e", f"{commit}^{{commit}}")
    except ReleaseError:
        shallow = git("rev-parse", "--is-shallow-repository").strip() == b"true"
        raise ReleaseError(
            f"commit {commit} is not in this clone's history"
            + ("; the clone is shallow: run `git fetch --unshallow`" if shallow else "; fetch it")
        ) from None
    names = git("ls-tree", "--name-only", f"{commit}:migrations").decode().split()
    return {n: git("show", f"{commit}:migrations/{n}") for n in sorted(names) if n.endswith(".sql")}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def freeze(version: str, commit: str = "HEAD", path: Path = RELEASED) -> Release:
    """Append a release of ``commit``'s migrations to ``path``, after checking it extends the last."""
    if not VERSION.fullmatch(version):
        raise ReleaseError(f"VERSION must look like 1.2.3, not {version!r}")
    releases = read_releases(path) if path.exists() else []
    last = releases[-1] if releases else None
    if last and tuple(map(int, version.split("."))) <= tuple(map(int, last.version.split("."))):
        raise ReleaseError(f"VERSION {version} must be above the last release, {last.version}")
    full = git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    git("merge-base", "--is-ancestor", full, "HEAD")  # a release of this branch's history
    current = {name: sha256(data) for name, data in migrations_at(full).items()}
    for name, digest in (last.migrations if last else {}).items():
        if current.get(name) != digest:
            raise ReleaseError(f"released migration {name} was changed or removed in {full[:12]}; "
                               "restore it and put the change into a new migration")
    release = Release(version, full, current)
    with path.open("a", encoding="utf-8") as out:
        if not releases:
            out.write(HEADER)
        out.write(f"\nrelease {version} commit {full}\n")
        out.writelines(f"  {digest}  {name}\n" for name, digest in current.items())
    return release


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make freeze VERSION=1.2.3 [COMMIT=sha]  (python tests/releases.py VERSION [COMMIT])")
    try:
        release = freeze(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "HEAD")
    except ReleaseError as exc:
        sys.exit(f"freeze: {exc}")
    print(f"recorded release {release.version} ({release.commit[:12]}, {len(release.migrations)} migrations)"
          f" in {RELEASED.relative_to(ROOT)}; commit it")


if __name__ == "__main__":
    main()
