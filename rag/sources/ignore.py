"""Which paths a scan leaves out: built-in exclusions, .gitignore and .ragignore.

Built-in exclusions (final: no ignore file can re-include them)
    * version-control metadata, dependency and tool caches, virtualenvs:
      see ``ALWAYS_SKIPPED_DIRS``, any ``*.egg-info`` directory and any directory
      holding a ``pyvenv.cfg`` (a virtualenv whatever its name);
    * build outputs, only where a build manifest makes the name unambiguous:
      ``build/`` next to pyproject.toml/setup.py/setup.cfg/Gradle/CMake files,
      ``dist/`` next to a Python manifest or package.json, ``target/`` next to
      Cargo.toml/pom.xml/build.sbt. Elsewhere these names are often real source
      (Go's ``build/`` packaging scripts, Vue 2's ``build/`` webpack config), so a
      ``build/`` without a manifest is kept; ``out/`` is never excluded;
    * lock files (``LOCK_FILES``), minified bundles and source maps;
    * editor artefacts: ``x~`` backups, ``.#x`` / ``#x#`` (Emacs), ``.x.swp`` and ``4913`` (Vim).

Secret-bearing files (skipped as "secret"; a ``.ragignore`` negation naming one,
e.g. ``!deploy/test.env``, indexes it on purpose)
    * dotenv files ``.env``, ``.env.*``, ``*.env`` and ``.envrc``, except
      templates such as ``.env.example``; ``.netrc``/``_netrc``;
    * ``.npmrc`` and ``.pypirc`` holding a token or password;
    * private keys: ``id_rsa``, ``id_dsa``, ``id_ecdsa``, ``id_ed25519`` and any
      ``*.pem``/``*.key`` holding a ``PRIVATE KEY`` block; ``.pgpass``;
    * every file in a ``.ssh`` folder (keys under any name), ``.git-credentials``,
      ``.aws/credentials``;
    * by content, when the indexer reads a file (``holds_secret``; no negation indexes
      these): a whole ``-----BEGIN … PRIVATE KEY-----`` block (or PGP's ``PRIVATE KEY BLOCK``)
      in any text file, its lines maybe commented out or quoted, a cloud service account's key
      file (``"type": "service_account"`` with ``"private_key"``) and a PuTTY key (``.ppk``).
      ``rag index --dry-run`` reads files to say so too.

Ignore files
    ``.gitignore`` and ``.ragignore`` files at every level, both with gitignore
    syntax: patterns are relative to the directory holding the file, deeper files
    override shallower ones, later lines override earlier ones, ``!`` re-includes.
    Every ``.ragignore`` pattern comes after every ``.gitignore`` pattern, so a
    ``.ragignore`` has the last word: ``!docs/generated/`` there indexes a folder
    git ignores. As in git, nothing below an excluded directory can be
    re-included (the scan does not descend into it).

    Patterns are matched by ``pathspec.GitIgnoreSpec``; to let its precedence rules
    work across files, each pattern is rewritten relative to the scan root and all
    patterns in force for a directory form one spec. File exclusions and file
    negations agree with git (tested against git on random trees). Known
    differences, from pathspec judging a directory also by patterns that match
    its ancestors: a negation matching a directory name (``!dir/``) also
    re-includes directories below it that an earlier or shallower pattern
    excludes; ``dir/**`` excludes ``dir`` itself, so a later ``!dir/file``
    cannot re-include (git would); ``*`` then ``!*/`` still excludes
    directories, so for allowlists use a source's ``include`` globs.
    ``.git/info/exclude`` and git's global excludes file are not read.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pathspec import GitIgnoreSpec

from rag.sources.reading import open_regular, read_regular_file

if TYPE_CHECKING:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

GITIGNORE = ".gitignore"
RAGIGNORE = ".ragignore"

ALWAYS_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        "__pypackages__",
        ".venv",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".gradle",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".parcel-cache",
        ".turbo",
        "_build",  # Sphinx and Elixir/Mix output
    }
)

VENV_MARKER = "pyvenv.cfg"

_PYTHON_MANIFESTS = frozenset({"pyproject.toml", "setup.py", "setup.cfg"})
_GRADLE_MANIFESTS = frozenset(
    {"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"}
)
BUILD_OUTPUT_DIRS: dict[str, frozenset[str]] = {
    "build": _PYTHON_MANIFESTS | _GRADLE_MANIFESTS | {"CMakeLists.txt"},
    "dist": _PYTHON_MANIFESTS | {"package.json"},
    "target": frozenset({"Cargo.toml", "pom.xml", "build.sbt"}),
}

LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "poetry.lock",
        "Pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
    }
)
GENERATED_FILE_SUFFIXES = (".min.js", ".min.css", ".map")
# Secrets must not reach an index agents can query; documented templates of
# dotenv files are worth indexing.
DOTENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist")
SECRET_FILES = frozenset(
    {".envrc", ".netrc", "_netrc", ".pgpass", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
     ".git-credentials"}
)
# (folder, file name or None for every file in it)
SECRET_FOLDER_FILES = ((".ssh", None), (".aws", "credentials"))
# A whole key block (its body base64, PEM headers, or JSON's escaped newlines), PGP's armored
# one too (its "Version: …" headers), its lines maybe commented out (#, //, --, ;, *) or quoted:
# an example elided with "..." is not one. Found marker by marker (_holds_key_block), in linear time.
_KEY_BEGIN = re.compile(rb"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK|)-----")
_KEY_END = re.compile(rb"-----END ([A-Z0-9 ]*)PRIVATE KEY( BLOCK|)-----")
_KEY_LINE_PREFIX = re.compile(rb"^[ \t]*(?:#|//|--|;|\*|\"|')?[ \t]*", re.MULTILINE)
_ARMOR_HEADER = re.compile(rb"^[A-Z][A-Za-z-]*: [^\r\n]*$", re.MULTILINE)
_KEY_BODY = re.compile(rb"(?:[A-Za-z0-9+/=\s:,\"'-]|\\n)+")
_MAX_KEY_BLOCK = 65536  # bytes between the markers: a PGP key with its subkeys fits
# PuTTY's key file (.ppk, any version), whatever its name.
_PUTTY_KEY = re.compile(rb"^PuTTY-User-Key-File-\d+:[^\n]*\n(?:[^\n]*\n)*?Private-Lines:", re.MULTILINE)
_SERVICE_ACCOUNT = re.compile(rb'"type"\s*:\s*"service_account"')
# Secret only when their text holds one: (file name or suffix, what gives it away).
_SECRET_CONTENT = (
    (".npmrc", re.compile(rb"_authToken|_auth\s*=|_password\s*=", re.IGNORECASE)),
    (".pypirc", re.compile(rb"^\s*password\s*[=:]", re.IGNORECASE | re.MULTILINE)),
    (".pem", re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
    (".key", re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
)
_SECRET_SNIFF_BYTES = 65536


def is_builtin_skipped_dir(name: str, sibling_names: Collection[str]) -> bool:
    """True for a directory that is never worth indexing, judged by its name and siblings."""
    if name in ALWAYS_SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    manifests = BUILD_OUTPUT_DIRS.get(name)
    return manifests is not None and any(m in sibling_names for m in manifests)


def is_virtualenv(child_names: Collection[str]) -> bool:
    """True for a directory whose listing shows it is a Python virtualenv."""
    return VENV_MARKER in child_names


def is_builtin_skipped_file(name: str) -> bool:
    """True for lock files, minified bundles, source maps and editor artefacts."""
    return name in LOCK_FILES or name.endswith(GENERATED_FILE_SUFFIXES) or is_editor_artefact(name)


def is_secret_file(name: str, path: str) -> bool:
    """True for a file that holds credentials, judged by its name and, for a few kinds, its text."""
    if name in SECRET_FILES or _is_dotenv(name):
        return True
    folder = os.path.basename(os.path.dirname(path))
    if any(folder == f and name == (n or name) for f, n in SECRET_FOLDER_FILES):
        return True
    pattern = next((p for suffix, p in _SECRET_CONTENT if name.endswith(suffix)), None)
    if pattern is None:
        return False
    try:
        with open(open_regular(path), "rb") as f:
            return pattern.search(f.read(_SECRET_SNIFF_BYTES)) is not None
    except OSError:
        return False  # the scan's own read check will name it unreadable


def holds_secret(data: bytes) -> bool:
    """True for text that holds a private key block (PEM or PGP) or is a service account's or
    PuTTY's key file."""
    return _holds_key_block(data) or (
        b'"private_key"' in data and _SERVICE_ACCOUNT.search(data) is not None) or (
        b"PuTTY-User-Key-File-" in data and _PUTTY_KEY.search(data) is not None)


def _holds_key_block(data: bytes) -> bool:
    if b"PRIVATE KEY" not in data:
        return False
    ends = [(m.start(), m[1], m[2]) for m in _KEY_END.finditer(data)]
    starts = [start for start, _, _ in ends]
    for begin in _KEY_BEGIN.finditer(data):
        at = bisect.bisect_left(starts, begin.end())
        if at == len(ends):
            return False  # (no END after this BEGIN: none after a later one either)
        end, kind, block = ends[at]
        if (kind, block) != (begin[1], begin[2]) or end - begin.end() > _MAX_KEY_BLOCK:
            continue
        inner = _ARMOR_HEADER.sub(b"", _KEY_LINE_PREFIX.sub(b"", data[begin.end():end]))
        if _KEY_BODY.fullmatch(inner.rstrip(b" \t#;*/-\"'")) is not None:
            return True
    return False


_EDITOR_ARTEFACT = re.compile(r".*~|\.#.*|#.*#|\..*\.sw[a-p]|4913")


def is_editor_artefact(name: str) -> bool:
    """Backups (``x~``), Emacs lock and autosave files (``.#x``, ``#x#``), Vim swap files
    (``.x.swp``) and Vim's write test file ``4913``: copies of text being edited, never sources."""
    return _EDITOR_ARTEFACT.fullmatch(name) is not None


def _is_dotenv(name: str) -> bool:
    if name.endswith(DOTENV_TEMPLATE_SUFFIXES):
        return False
    return name.startswith(".env.") or name.endswith(".env")


@dataclass(frozen=True)
class IgnoreRules:
    """The .gitignore and .ragignore patterns in force in one directory.

    Paths given to ``reason`` are relative to the scan root, POSIX, and end
    with "/" for directories (so directory-only patterns apply).
    """

    gitignore: tuple[GitIgnoreSpecPattern, ...] = ()
    ragignore: tuple[GitIgnoreSpecPattern, ...] = ()
    _spec: GitIgnoreSpec | None = None  # gitignore then ragignore patterns, in force order

    def descend(self, rel_dir: str, abs_dir: str, names: Collection[str]) -> IgnoreRules:
        """The rules for directory ``rel_dir``, given the names it contains."""
        added_git = _read_ignore_file(abs_dir, GITIGNORE, rel_dir) if GITIGNORE in names else []
        added_rag = _read_ignore_file(abs_dir, RAGIGNORE, rel_dir) if RAGIGNORE in names else []
        if not added_git and not added_rag:
            return self
        gitignore = (*self.gitignore, *added_git)
        ragignore = (*self.ragignore, *added_rag)
        return IgnoreRules(gitignore, ragignore, GitIgnoreSpec([*gitignore, *ragignore]))

    def reason(self, rel_path: str) -> str | None:
        """Return "gitignore" or "ragignore" if that kind of file excludes the path, else None."""
        if self._spec is None:
            return None
        result = self._spec.check_file(rel_path)
        if not result.include or result.index is None:
            return None
        return "gitignore" if result.index < len(self.gitignore) else "ragignore"

    def reincluded(self, rel_path: str) -> bool:
        """True if a ``.ragignore`` negation (``!path``) is the last pattern matching the path."""
        if self._spec is None:
            return False
        result = self._spec.check_file(rel_path)
        return result.include is False and result.index is not None and (
            result.index >= len(self.gitignore)
        )


def _read_ignore_file(abs_dir: str, file_name: str, rel_dir: str) -> list[GitIgnoreSpecPattern]:
    """The file's patterns rebased onto the scan root; none if it cannot be read."""
    try:
        data = read_regular_file(os.path.join(abs_dir, file_name), follow_symlinks=True)
    except OSError:
        return []  # like git, an unreadable ignore file is no ignore file
    lines = data.decode("utf-8", errors="replace").splitlines()
    rebased = (rebase_pattern(line, rel_dir) for line in lines)
    return compile_patterns(line for line in rebased if line is not None)


def compile_patterns(lines: Iterable[str]) -> list[GitIgnoreSpecPattern]:
    """Compile gitignore lines one by one, dropping invalid ones as git does."""
    patterns: list[GitIgnoreSpecPattern] = []
    for line in lines:
        try:
            # Only the combined spec needs a fast backend; one line needs none.
            compiled = GitIgnoreSpec.from_lines([line], backend="simple").patterns
        except (ValueError, re.error):
            continue
        patterns.extend(p for p in compiled if p.include is not None)
    return patterns


_GLOB_SPECIAL = re.compile(r"([\\*?\[])")


def rebase_pattern(line: str, rel_dir: str) -> str | None:
    """Rewrite a pattern from the ignore file in ``rel_dir`` to be relative to the root.

    Returns None for blank lines, comments and patterns that match nothing.
    A pattern with a slash before its end is anchored to its file's directory;
    one without matches at any depth below it.
    """
    if not line.strip() or line.startswith("#"):
        return None
    negation = "!" if line.startswith("!") else ""
    body = line[len(negation) :]
    if not body.strip().strip("/"):
        return None
    if not rel_dir:
        return line
    anchored = "/" in body.rstrip().rstrip("/")
    prefix = _escape_glob(rel_dir)
    if anchored:
        return f"{negation}{prefix}/{body.lstrip('/')}"
    return f"{negation}{prefix}/**/{body}"


def _escape_glob(rel_dir: str) -> str:
    escaped = _GLOB_SPECIAL.sub(r"\\\1", rel_dir)
    # At the start of a line these two would read as negation or comment.
    return "\\" + escaped if escaped[0] in "!#" else escaped
