"""The service's sources: which are configured, which the catalog holds (as their last run took
them), which to index or watch, listing and removing them; each asked of its ``Source``
(``rag.sources.registry``), whatever its kind."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from rag import sqlapi
from rag.config import SourceSpec
from rag.errors import RagError
from rag.hints import Hint
from rag.schemas import ConfigChange, GcOutput, RemoveOutput, SourceInfo, SourcesOutput
from rag.service.core import ServiceCore
from rag.sources.base import PollIntervals, Source
from rag.sources.registry import catalog_source, source_for


class SourceCatalog(ServiceCore):
    """Sources: the config's, the catalog's, and what each is as a ``Source``."""

    def source(self, spec: SourceSpec) -> Source:
        """``spec`` as a source of its kind, with this configuration (reads nothing yet)."""
        return source_for(spec, self.config)

    def configured_source(self, name: str) -> SourceSpec | None:
        for source in self.config.sources:
            if source.name == name:
                return source.spec()
        return None

    def known_source(self, name: str) -> SourceSpec | None:
        """A source from the config, else one indexed before (as the catalog recorded it)."""
        spec = self.configured_source(name)
        if spec is not None:
            return spec
        return self.indexed_source(name)

    def indexed_source(self, name: str) -> SourceSpec | None:
        """A source as its last run took it, None when it was never indexed."""
        return next((s for s in self.indexed_sources(name) if s.name == name), None)

    def indexed_sources(self, name_prefix: str | None = None) -> list[SourceSpec]:
        """The sources in the database, as their last run took them (branch, include, exclude)."""
        rows = self.with_db(lambda conn: sqlapi.list_sources(conn, name_prefix))
        return [catalog_source(r) for r in rows]

    def every_source(self) -> list[SourceSpec]:
        """``rag index --all``: the configured sources, then those only the database knows."""
        configured = [s.spec() for s in self.config.sources]
        names = {s.name for s in configured}
        return configured + [s for s in self.indexed_sources() if s.name not in names]

    def source_at(self, folder: Path) -> SourceSpec | None:
        """The source (configured or indexed) whose folder, indexed in place, is ``folder``."""
        candidates = [s.spec() for s in self.config.sources] + self.indexed_sources()
        for spec in candidates:
            own = self.source(spec).folder()
            if own is not None and own.expanduser().resolve() == folder:
                return spec
        return None

    def remembered(self, spec: SourceSpec) -> SourceSpec:
        """An ad hoc source given again: what the command line leaves out (a git branch, include
        and exclude globs) is what the earlier run of the same source used."""
        earlier = next((s for s in self.indexed_sources(spec.name)
                        if (s.name, s.type, s.location) == (spec.name, spec.type, spec.location)), None)
        if earlier is None:
            return spec
        return SourceSpec(spec.name, spec.type, spec.location, spec.branch or earlier.branch,
                          spec.include or earlier.include, spec.exclude or earlier.exclude, spec.pages)

    def known_source_names(self) -> list[str]:
        indexed = self.with_db(sqlapi.list_sources)
        return sorted({s.name for s in self.config.sources} | {r["name"] for r in indexed})

    def sources_to_watch(self, names: Collection[str] = ()) -> list[SourceSpec]:
        """The sources to keep fresh: those named, else every one in the config or the database
        whose folder is on this machine, and those polled unless their polling is off (git,
        Confluence); each as its index was made (a changed config is applied by
        ``rag index NAME``, which ``status`` names, never by a sync nobody asked for)."""
        if names:
            specs = []
            for name in names:
                spec = self.indexed_source(name) or self.configured_source(name)
                if spec is None:
                    known = ", ".join(self.known_source_names()) or "none"
                    raise RagError(f"source {name!r} not found (known: {known}); "
                                   "use --path DIR to watch a folder")
                specs.append(spec)
            return specs
        polls = PollIntervals.configured(self.config.indexing)
        found = {s.name: s.spec() for s in self.config.sources}
        for spec in self.indexed_sources():
            found[spec.name] = spec  # as indexed: a sync never applies a changed definition
        return [spec for _, spec in sorted(found.items()) if self.source(spec).watched(polls)]

    def list_sources(
        self,
        path_prefix: str | None = None,
        source_type: str | None = None,
        name_prefix: str | None = None,
        limit: int | None = None,
    ) -> SourcesOutput:
        """The indexed sources, filtered by SQL; ``limit`` None: all of them."""
        prefix = path_prefix
        if prefix and prefix.startswith("~"):
            prefix = str(Path(prefix).expanduser())
        rows = self.with_db(lambda conn: sqlapi.list_sources(
            conn, name_prefix or None, source_type, limit or None, prefix or None))
        return SourcesOutput(sources=[
            SourceInfo(id=r["id"], name=r["name"], type=r["type"], path=r["location"], branch=r["branch"],
                       file_count=r["files"], chunk_count=r["chunks"], last_indexed_at=r["last_indexed_at"],
                       indexing=r["indexing"], commit_sha=r["commit_sha"],
                       **self.source(catalog_source(r)).describe(r["commit_sha"]).fields)
            for r in rows
        ])

    def remove_source(self, name: str) -> RemoveOutput:
        """Delete a source with its files and chunks (refused by SQL while it is being indexed);
        what local-rag keeps of it on disk (a git clone) goes too."""
        kept = next((self.source(s).kept_copy() for s in self.indexed_sources(name) if s.name == name), None)
        removed = self.with_db(lambda conn: sqlapi.remove_source(conn, name), retry=False)
        if kept is not None and kept.is_dir():
            import shutil

            shutil.rmtree(kept)
        return RemoveOutput(name=name, removed_chunks=removed,
                            deleted_clone=str(kept) if kept is not None else None)

    def gc(self) -> GcOutput:
        """Delete embeddings no chunk uses any more."""
        return GcOutput(pruned_embeddings=self.with_db(sqlapi.gc, retry=False))

    def _config_changes(self, indexed: list[SourceSpec]) -> list[ConfigChange]:
        """The configured sources whose index was made with another definition."""
        stored = {s.name: s for s in indexed}
        found = []
        for source in self.config.sources:
            spec = source.spec()
            if spec.name in stored:
                changes = definition_changes(stored[spec.name], spec)
                if changes:
                    found.append(ConfigChange(source=spec.name, changes=changes,
                                              apply=Hint("index", spec.name).render(self.interface)))
        return found

    def _same_folder_warnings(self, spec: SourceSpec) -> list[str]:
        """Other sources over the folder ``spec`` indexes in place, or over a folder within it or
        around it: each doubles the index of the files they share (searches show them once)."""
        from rag.hints import with_hint

        if self.source(spec).folder() is None:
            return []
        warnings = []
        for other in self.indexed_sources():
            if other.name == spec.name or self.source(other).folder() is None:
                continue
            copy = spec.name  # (the source to remove: the one over the subfolder)
            if other.location == spec.location:
                shared = f"the folder {spec.location} is also indexed as source {other.name!r}"
            elif _within(other.location, spec.location):
                shared = f"its subfolder {other.location} is also indexed as source {other.name!r}"
                copy = other.name
            elif _within(spec.location, other.location):
                shared = (f"the folder {spec.location} is also indexed within source {other.name!r} "
                          f"({other.location})")
            else:
                continue
            warnings.append(with_hint(f"{shared}; searches show its files once", Hint("remove", copy),
                                      self.interface))
        return warnings


def _within(folder: str, parent: str) -> bool:
    return folder.startswith(parent.rstrip("/") + "/")


def definition_changes(stored: SourceSpec, configured: SourceSpec) -> list[str]:
    """How ``configured`` differs from the definition ``stored`` in the catalog (a branch the
    config leaves out is whichever the clone has, not a change)."""
    changes = []
    for field in ("type", "location", "branch", "include", "exclude"):
        was, now = getattr(stored, field), getattr(configured, field)
        if field == "branch" and now is None:
            continue
        if was != now:
            show = (lambda v: repr(list(v))) if field in ("include", "exclude") else repr
            changes.append(f"{field}: {show(was)} in the index, {show(now)} in the config")
    return changes
