"""A folder's files as a source: ``Folder`` (the ``Documents`` of a local folder or a git
clone: scanned, read from disk, chunked by their kind) and ``LocalFolder``, a local source,
indexed in place and watched by file-system events.

``preview_folder`` is the dry run of any folder: what ``scan`` keeps, less what an index run
would refuse by content (binary files, files holding a private key).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.config import ChunkSettings, SourceSpec
from rag.errors import FileUnreadableError, IndexingError
from rag.sources.base import Described, Documents, Preview, Resolved, Source, default_source_name
from rag.sources.reading import read_regular_file

if TYPE_CHECKING:
    from rag.dispatcher import FileChunks
    from rag.sources.scan import ScannedFile, ScanResult


@dataclass
class Folder:
    """A folder's files (a local source's, or a git clone's): scanned, read from disk, chunked
    by their kind."""

    root: Path
    spec: SourceSpec
    settings: ChunkSettings

    def scan(self, paths: list[str] | None) -> ScanResult:
        return scan(self.root, self.spec, self.settings, paths)

    def prefetch(self, files: list[ScannedFile]) -> None:
        pass  # a local read is fast enough in turn

    def read(self, file: ScannedFile) -> bytes:
        try:
            return read_regular_file(file.abs_path, max_bytes=self.settings.max_file_size)
        except OSError as exc:
            raise FileUnreadableError(f"cannot read: {exc.strerror}") from None

    def chunk(self, data: bytes, file: ScannedFile, settings: ChunkSettings) -> FileChunks:
        # Imported on first use: the chunkers (tree-sitter and its grammars)
        # add ~50 ms to a run, and one with nothing changed never needs them.
        from rag.dispatcher import chunk_bytes

        return chunk_bytes(data, file.path, max_tokens=settings.max_tokens, overlap=settings.overlap)

    def reread(self, file: ScannedFile, text: str, metadata: dict[str, Any]) -> bytes:
        return text.encode("utf-8")  # (a file has no place to move from: never asked)

    def close(self) -> None:
        pass


def scan(root: Path, spec: SourceSpec, settings: ChunkSettings,
         paths: Collection[str] | None = None) -> ScanResult:
    """The source's files, or (``paths``) only those at or under these relative paths."""
    # (imported here: the service knows the kinds of source without loading the scanner's globs)
    from rag.sources.scan import scan_paths, scan_source

    if not root.is_dir():
        raise IndexingError(f"source {spec.name!r}: {root} is not a directory; check the path")
    rules: dict[str, Any] = {"include": list(spec.include) or None, "exclude": list(spec.exclude) or None,
                             "max_file_size": settings.max_file_size}
    if paths is not None:
        return scan_paths(root, paths, **rules)
    return scan_source(root, **rules)


def preview_folder(documents: Documents) -> Preview:
    """A folder's dry run: its scan, less the files an index run would refuse by content (as
    binary, a file error here too; or as ``secret``: a private key block in any text file)."""
    from rag.dispatcher import file_rejected_as_binary

    scanned = documents.scan(None)
    binary = {f.path for f in scanned.files if file_rejected_as_binary(f.abs_path)}
    secret = {f.path for f in scanned.files if f.path not in binary and _holds_secret(f.abs_path)}
    skipped = {**scanned.skipped, "secret": sorted({*scanned.skipped.get("secret", []), *secret})}
    return Preview(files=[f for f in scanned.files if f.path not in binary and f.path not in secret],
                   skipped={reason: paths for reason, paths in skipped.items() if paths},
                   problems=scanned.problems() + [{"path": path, "error": "binary file"}
                                                  for path in sorted(binary)])


def _holds_secret(path: Path) -> bool:
    """Whether an index run would skip this file as ``secret`` by its content."""
    from rag.sources.ignore import holds_secret

    try:
        return holds_secret(read_regular_file(path))
    except OSError:
        return False  # (the run records it as a file error)


class LocalFolder(Source):
    """A folder on this machine, indexed in place and watched by file-system events."""

    kind = "local"

    def resolve(self, *, sync: bool) -> Resolved:
        root = Path(self.spec.location)
        return Resolved(Folder(root, self.spec, self.config.chunk_settings()), str(root))

    def dry_run(self, documents: Documents) -> Preview:
        return preview_folder(documents)

    def poll(self) -> str | None:
        return None  # (watched by its folder's events, never polled)

    def describe(self, commit_sha: str | None) -> Described:
        return Described()

    def folder(self) -> Path:
        return Path(self.spec.location)


def folder_source(folder: Path, name: str | None = None, include: tuple[str, ...] = (),
                  exclude: tuple[str, ...] = ()) -> SourceSpec:
    """An ad hoc local source: ``folder`` (absolute), named after it unless ``name``."""
    return SourceSpec(name or default_source_name(str(folder)), LocalFolder.kind, str(folder), None,
                      include, exclude)
