"""Which files of a source folder get indexed: the walk and the per-file checks.

``scan_source`` lists the candidate files with their size and mtime and says why
every other path was left out. It reads no file contents except the first 8 KB
of files whose extension says neither "text" nor "binary" and of large
JavaScript and CSS files (minified code, judged by line length), so a re-index that
changes nothing stays cheap; the indexer compares (path, size, mtime_ns) with
the database to find what changed.

A path is checked in this order, the first failing check naming its reason:
its name (not UTF-8, or over ``MAX_PATH_BYTES``: the database could not key
it), built-in exclusions and ignore files (see ``rag.sources.ignore``), the
source's ``exclude`` globs, its ``include`` globs, symlinks, secret-bearing
files, size, minified or binary content, readability. Directories are checked by the first
four and, when excluded, not descended into; their skipped entry ends with "/".

Symlinks are never followed: one pointing outside the root is skipped as
"symlink outside root", one pointing inside it as "symlink inside root" (its
target is indexed under its own path, so following it would only duplicate
content and risk cycles), a dangling one as "broken symlink".

Nothing in a tree stops a scan: any ``OSError`` met on one entry (``/proc``
entries vanish and refuse ``realpath``) makes it skipped as "unreadable", and
files are opened without blocking and re-checked as regular files after
opening, so a FIFO swapped in after the walk cannot hang the run
(``read_regular_file``). ``ScanResult.problems`` names the skips a user should
hear about as per-file errors.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from rag.errors import SourceError
from rag.sources.ignore import (
    IgnoreRules,
    is_builtin_skipped_dir,
    is_builtin_skipped_file,
    is_secret_file,
    is_virtualenv,
)
from rag.sources.reading import read_head


@dataclass(frozen=True)
class ScannedFile:
    path: str  # relative to the root, POSIX separators
    root: Path
    size: int
    mtime_ns: int
    place: tuple[str, ...] | None = None  # a Confluence page's ancestors: moved when they change

    @property
    def abs_path(self) -> Path:
        # Made when read: a Path per file cost a quarter of scanning Django,
        # and a re-index with nothing changed reads no file.
        return self.root / self.path


# The longest relative path stored: rag.files is keyed by (source_id, path) in
# a btree, whose entries PostgreSQL caps at 2704 bytes.
MAX_PATH_BYTES = 2048
NOT_UTF8 = "name not UTF-8"
TOO_LONG = "path too long"
# Skips that are faults of the tree, not choices: reported as per-file errors too.
_PROBLEMS = {
    NOT_UTF8: "the file name is not valid UTF-8; rename it to index it",
    TOO_LONG: f"the path is longer than {MAX_PATH_BYTES} bytes; shorten it to index it",
}
_SHOWN_PATH_CHARS = 200


@dataclass
class ScanResult:
    files: list[ScannedFile]  # sorted by path
    skipped: dict[str, list[str]] = field(default_factory=dict)  # reason -> sorted paths

    def problems(self) -> list[dict[str, str]]:
        """The skipped paths a user must fix, as ``{"path", "error"}`` with a printable path."""
        return [
            {"path": printable_path(path), "error": message}
            for reason, message in _PROBLEMS.items()
            for path in self.skipped.get(reason, ())
        ]


def printable_path(path: str) -> str:
    """A path fit for a terminal and JSON: undecodable bytes as ``\\xe9``, long ones cut."""
    shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if len(shown) > _SHOWN_PATH_CHARS:
        return shown[: _SHOWN_PATH_CHARS // 2] + "…" + shown[-_SHOWN_PATH_CHARS // 2 :]
    return shown


# Indexed as text or as documents (pdf, docx) without looking inside.
TEXT_EXTENSIONS = frozenset(
    {
        "py", "pyi", "pyx", "pxd", "ipynb", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts",
        "tsx", "vue", "svelte", "astro", "java", "kt", "kts", "scala", "groovy", "gradle", "go",
        "rs", "c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx", "m", "mm", "swift", "cs", "fs",
        "fsx", "vb", "rb", "php", "pl", "pm", "lua", "r", "jl", "dart", "ex", "exs", "erl",
        "hrl", "hs", "elm", "clj", "cljs", "edn", "ml", "mli", "nim", "zig", "sol", "sql", "sh",
        "bash", "zsh", "fish", "ps1", "psm1", "bat", "cmd", "tf", "hcl", "proto", "graphql",
        "gql", "thrift", "md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org",
        "tex", "bib", "html", "htm", "xhtml", "css", "scss", "sass", "less", "json", "jsonc",
        "json5", "yaml", "yml", "toml", "ini", "cfg", "conf", "properties", "xml", "xsd", "xsl",
        "svg", "csv", "tsv", "po", "pot", "j2", "jinja", "jinja2", "tpl", "mustache", "hbs",
        "ejs", "erb", "twig", "pdf", "docx",
    }
)

# Skipped as binary without reading: media, fonts, archives, compiled code,
# data and office formats the chunkers do not read.
BINARY_EXTENSIONS = frozenset(
    {
        "png", "jpg", "jpeg", "gif", "bmp", "ico", "icns", "webp", "tif", "tiff", "psd", "heic",
        "avif", "ttf", "otf", "woff", "woff2", "eot", "zip", "tar", "gz", "tgz", "bz2", "xz",
        "lz", "lzma", "zst", "7z", "rar", "jar", "war", "ear", "whl", "egg", "apk", "dmg",
        "iso", "deb", "rpm", "pyc", "pyo", "pyd", "so", "dylib", "dll", "exe", "o", "a", "lib",
        "obj", "class", "wasm", "mo", "beam", "mp3", "mp4", "m4a", "wav", "ogg", "flac", "avi",
        "mov", "mkv", "webm", "sqlite", "sqlite3", "db", "pkl", "pickle", "npy", "npz",
        "parquet", "feather", "h5", "hdf5", "onnx", "pt", "pth", "safetensors", "ckpt", "mmdb",
        "shp", "shx", "dbf", "doc", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp",
    }
)

SNIFF_BYTES = 8192
# Minified (bundled) code is one or a few enormous lines, whatever its name:
# chunked, a 900 KB line became 1,695 chunks nobody searches. Judged by the
# mean line length of its first SNIFF_BYTES (written code: 20-60), in files
# large enough to matter, of every kind (a one-line .ts bundle or 1 MB .json too)
# but prose and the formats read as their own (a paragraph may be one long line).
NEVER_MINIFIED_EXTENSIONS = frozenset(
    {"md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org", "tex", "bib", "ipynb", "pdf",
     "docx", "csv", "tsv", "po", "pot"})
MINIFIED_MIN_BYTES = 32_768
MINIFIED_MEAN_LINE = 500
# Bytes that occur in text: printable ASCII, common whitespace/controls, and
# everything >= 0x80 (UTF-8 or a legacy 8-bit encoding).
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r\f\b\x1b" + bytes(range(0x80, 0x100))
_MAX_NON_TEXT_RATIO = 0.3


def scan_source(
    root: Path,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    max_file_size: int = 1_000_000,
) -> ScanResult:
    """List the files of ``root`` to index and, by reason, the paths left out.

    ``include`` and ``exclude`` are gitignore-style globs on the path relative to
    ``root`` (``*.md`` matches at any depth, ``src/**`` everything under src,
    ``docs/`` a directory). When ``include`` is non-empty only matching files are
    kept; an excluded directory is not descended into.
    """
    scan = _Scan(
        root=_checked_root(root),
        include=_compile_globs(include, "include"),
        exclude=_compile_globs(exclude, "exclude"),
        max_file_size=max_file_size,
    )
    scan.walk()
    return scan.result()


def scan_paths(
    root: Path,
    paths: Iterable[str],
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    max_file_size: int = 1_000_000,
) -> ScanResult:
    """``scan_source`` for some paths of ``root`` only (relative, POSIX): each file that passes the
    same checks, each folder walked whole; a path that no longer exists is left out."""
    scan = _Scan(
        root=_checked_root(root),
        include=_compile_globs(include, "include"),
        exclude=_compile_globs(exclude, "exclude"),
        max_file_size=max_file_size,
    )
    folders: dict[str, _Listed] = {}
    for rel_path in sorted(set(paths)):
        scan.visit(rel_path, folders)
    result = scan.result()
    # A folder and a path in it were both given: what both reached is listed once.
    result.files = list({f.path: f for f in result.files}.values())
    result.skipped = {reason: sorted(set(paths)) for reason, paths in result.skipped.items()}
    return result


def _checked_root(root: Path) -> Path:
    resolved = Path(root).expanduser().resolve()
    if not resolved.is_dir():
        what = "is not a folder" if resolved.exists() else "does not exist"
        raise SourceError(f"source folder {root} {what}; fix the path in your config")
    return resolved


def _compile_globs(globs: list[str] | None, option: str) -> GitIgnoreSpec | None:
    if not globs:
        return None
    for glob in globs:
        try:
            GitIgnoreSpec.from_lines([glob])
        except (ValueError, re.error) as e:
            raise SourceError(
                f"invalid {option} glob {glob!r} ({e}); use gitignore-style globs"
            ) from e
    return GitIgnoreSpec.from_lines(globs)


_Listed = tuple[dict[str, os.DirEntry[str]], IgnoreRules]  # a folder's entries by name, its rules


@dataclass
class _Scan:
    root: Path
    include: GitIgnoreSpec | None
    exclude: GitIgnoreSpec | None
    max_file_size: int
    files: list[ScannedFile] = field(default_factory=list)
    skipped: defaultdict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def walk(self, start: tuple[str, str, IgnoreRules] | None = None) -> None:
        # Depth-first with an explicit stack: deep trees cannot hit the recursion limit.
        pending: list[tuple[str, str, IgnoreRules]] = [start or ("", str(self.root), IgnoreRules())]
        while pending:
            rel_dir, abs_dir, parent_rules = pending.pop()
            entries = self._list_dir(rel_dir, abs_dir)
            if entries is None:
                continue
            names = {entry.name for entry in entries}
            if rel_dir and is_virtualenv(names):
                self.skipped["builtin"].append(rel_dir + "/")
                continue
            rules = parent_rules.descend(rel_dir, abs_dir, names)
            for entry in entries:
                rel_path = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    self._consider(entry, rel_path, names, rules, pending)
                except OSError:
                    self.skipped["unreadable"].append(rel_path)

    def _consider(
        self,
        entry: os.DirEntry[str],
        rel_path: str,
        sibling_names: set[str],
        rules: IgnoreRules,
        pending: list[tuple[str, str, IgnoreRules]],
    ) -> None:
        is_dir = entry.is_dir(follow_symlinks=False)
        shown = rel_path + "/" if is_dir else rel_path
        reason = _name_reason(rel_path)
        if reason is None and is_dir:
            reason = self._dir_reason(entry.name, rel_path, sibling_names, rules)
            if reason is None:
                pending.append((rel_path, entry.path, rules))
                return
        if reason is not None:
            self.skipped[reason].append(shown)
        else:
            self._consider_file(entry, rel_path, rules)

    def visit(self, rel_path: str, folders: dict[str, _Listed]) -> None:
        """Check one path as ``walk`` would reach it: its folders from the root down (listed once
        per scan in ``folders``), then the file, or the whole folder it names."""
        parts = rel_path.split("/")
        rel_dir, abs_dir, rules = "", str(self.root), IgnoreRules()
        for depth, name in enumerate(parts, 1):
            if rel_dir not in folders:
                listed = self._list_dir(rel_dir, abs_dir)
                if listed is None or (rel_dir and is_virtualenv({e.name for e in listed})):
                    return
                entries = {e.name: e for e in listed}
                folders[rel_dir] = entries, rules.descend(rel_dir, abs_dir, entries.keys())
            entries, rules = folders[rel_dir]
            entry = entries.get(name)
            if entry is None:
                return  # gone since the event
            child = f"{rel_dir}/{name}" if rel_dir else name
            if not entry.is_dir(follow_symlinks=False):
                if depth == len(parts):
                    self._consider_file(entry, child, rules)
                return
            reason = self._dir_reason(name, child, set(entries), rules)
            if reason is not None:
                self.skipped[reason].append(child + "/")
                return
            if depth == len(parts):
                self.walk((child, entry.path, rules))
            rel_dir, abs_dir = child, entry.path

    def result(self) -> ScanResult:
        self.files.sort(key=lambda f: f.path)
        skipped = {reason: sorted(paths) for reason, paths in sorted(self.skipped.items())}
        return ScanResult(files=self.files, skipped=skipped)

    def _list_dir(self, rel_dir: str, abs_dir: str) -> list[os.DirEntry[str]] | None:
        try:
            with os.scandir(abs_dir) as it:
                return list(it)
        except OSError:
            self.skipped["unreadable"].append(rel_dir + "/" if rel_dir else ".")
            return None

    def _dir_reason(
        self, name: str, rel_path: str, sibling_names: set[str], rules: IgnoreRules
    ) -> str | None:
        if is_builtin_skipped_dir(name, sibling_names):
            return "builtin"
        dir_path = rel_path + "/"
        ignored = rules.reason(dir_path)
        if ignored is not None:
            return ignored
        if self.exclude is not None and self.exclude.match_file(dir_path):
            return "exclude"
        return None

    def _consider_file(
        self, entry: os.DirEntry[str], rel_path: str, rules: IgnoreRules
    ) -> None:
        reason = self._path_reason(entry.name, rel_path, rules) or self._kind_reason(entry)
        if reason is None and is_secret_file(entry.name, entry.path) and not rules.reincluded(rel_path):
            reason = "secret"
        if reason is None:
            try:
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                reason = "unreadable"
            else:
                reason = self._content_reason(entry, stat.st_size)
                if reason is None:
                    self.files.append(
                        ScannedFile(rel_path, self.root, stat.st_size, stat.st_mtime_ns)
                    )
                    return
        self.skipped[reason].append(rel_path)

    def _path_reason(self, name: str, rel_path: str, rules: IgnoreRules) -> str | None:
        if is_builtin_skipped_file(name):
            return "builtin"
        ignored = rules.reason(rel_path)
        if ignored is not None:
            return ignored
        if self.exclude is not None and self.exclude.match_file(rel_path):
            return "exclude"
        if self.include is not None and not self.include.match_file(rel_path):
            return "not included"
        return None

    def _kind_reason(self, entry: os.DirEntry[str]) -> str | None:
        if entry.is_symlink():
            return self._symlink_reason(entry.path)
        if not entry.is_file(follow_symlinks=False):
            return "not a regular file"  # FIFOs, sockets, devices: reading could block
        return None

    def _symlink_reason(self, link_path: str) -> str:
        try:
            target = os.path.realpath(link_path)
        except OSError:  # /proc/<pid>/exe and friends
            return "broken symlink"
        if not os.path.exists(target):
            return "broken symlink"
        root = str(self.root)
        if os.path.commonpath([target, root]) != root:
            return "symlink outside root"
        return "symlink inside root"

    def _content_reason(self, entry: os.DirEntry[str], size: int) -> str | None:
        extension = _extension(entry.name)
        if extension in BINARY_EXTENSIONS:
            return "binary"
        if size > self.max_file_size:
            return "too large"
        if size >= MINIFIED_MIN_BYTES and extension not in NEVER_MINIFIED_EXTENSIONS:
            return _sniff_minified(entry.path, known_text=extension in TEXT_EXTENSIONS)
        if extension in TEXT_EXTENSIONS:
            return None if os.access(entry.path, os.R_OK) else "unreadable"
        return _sniff(entry.path)


def _name_reason(rel_path: str) -> str | None:
    try:
        size = len(rel_path.encode("utf-8"))
    except UnicodeEncodeError:  # os.scandir's surrogate escapes for undecodable bytes
        return NOT_UTF8
    return TOO_LONG if size > MAX_PATH_BYTES else None


def _extension(name: str) -> str:
    _, dot, extension = name.rpartition(".")
    return extension.lower() if dot else ""


def _sniff(path: str) -> str | None:
    """Return "binary" or "unreadable" judged from the first bytes, None for text."""
    try:
        sample = read_head(path, SNIFF_BYTES)
    except OSError:
        return "unreadable"
    return "binary" if looks_binary(sample) else None


def _sniff_minified(path: str, *, known_text: bool) -> str | None:
    """Return "minified", "unreadable" (or, unless ``known_text``, "binary") judged from the
    first bytes (the line length for "minified"), None for code."""
    try:
        sample = read_head(path, SNIFF_BYTES)
    except OSError:
        return "unreadable"
    if not known_text and looks_binary(sample):
        return "binary"
    return "minified" if len(sample) / (sample.count(b"\n") + 1) > MINIFIED_MEAN_LINE else None


def looks_binary(sample: bytes) -> bool:
    """A NUL byte, or many bytes that text does not contain, mean binary."""
    if b"\0" in sample:
        return True
    if not sample:
        return False
    non_text = len(sample.translate(None, _TEXT_BYTES))
    return non_text / len(sample) > _MAX_NON_TEXT_RATIO
