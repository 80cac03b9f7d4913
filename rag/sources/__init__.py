"""Sources: choosing the files of a folder to index, and syncing git repositories.

``scan_source`` walks a folder (``rag.sources.scan``) applying built-in
exclusions, .gitignore/.ragignore files (``rag.sources.ignore``) and per-source
include/exclude globs; ``sync_git_source`` (``rag.sources.git``) keeps a shallow
clone of a repository up to date so it can be scanned like any folder.
"""

from rag.errors import SourceError
from rag.sources.git import sync_git_source
from rag.sources.scan import ScannedFile, ScanResult, scan_source

__all__ = ["ScanResult", "ScannedFile", "SourceError", "scan_source", "sync_git_source"]
