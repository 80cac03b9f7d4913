"""A git repository as a source: a shallow clone local-rag keeps (``rag.sources.git``), scanned
like any folder, fetched before a run and polled by a watcher, whose last commit indexed
``rag status`` shows."""

from __future__ import annotations

from pathlib import Path

from rag.config import SourceSpec
from rag.schemas import GitCommit
from rag.sources.base import (
    Described,
    Documents,
    PollIntervals,
    Preview,
    Resolved,
    Source,
    default_source_name,
)
from rag.sources.folder import Folder, preview_folder


class GitRepository(Source):
    """A branch of a git repository, cloned under ``indexing.git.cloneDir`` (else $RAG_HOME/repos)."""

    kind = "git"

    def resolve(self, *, sync: bool) -> Resolved:
        root, commit = self._checkout(sync=sync)
        return Resolved(Folder(root, self.spec, self.config.chunk_settings()), str(root), commit)

    def dry_run(self, documents: Documents) -> Preview:
        return preview_folder(documents)

    def poll(self) -> str:
        """Fetch the branch into the clone: the commit it is at now."""
        commit = self._checkout(sync=True)[1]
        assert commit is not None
        return commit

    def poll_interval(self, polls: PollIntervals) -> float:
        return polls.git

    def describe(self, commit_sha: str | None) -> Described:
        spec = self.spec
        return Described(commit=GitCommit(name=spec.name, branch=spec.branch, commit_sha=commit_sha))

    def kept_copy(self) -> Path:
        """Where it is cloned (indexing.git.cloneDir, else $RAG_HOME/repos), by its name."""
        from rag.embedded import data_dir

        configured = self.config.indexing.git.clone_dir
        return (Path(configured).expanduser() if configured else data_dir() / "repos") / self.spec.name

    def _checkout(self, *, sync: bool) -> tuple[Path, str | None]:
        """The clone, with the commit it was just brought to (None when not synced)."""
        from rag.sources.git import sync_git_source

        dest = self.kept_copy()
        if sync or not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            return dest, sync_git_source(self.spec.location, dest, branch=self.spec.branch)
        return dest, None


def git_source(url: str, branch: str | None = None, name: str | None = None, include: tuple[str, ...] = (),
               exclude: tuple[str, ...] = ()) -> SourceSpec:
    """An ad hoc git source, named after the repository unless ``name``."""
    return SourceSpec(name or default_source_name(url), GitRepository.kind, url, branch, include, exclude)
