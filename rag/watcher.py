"""Keeping sources fresh: file-system events turned into small index runs.

A ``Watcher`` watches the folders of some local sources, one thread each on ``watchfiles``
(inotify, FSEvents, ReadDirectoryChangesW; no polling while events work), and collects the
relative paths that changed. Its ``run`` loop syncs each source with pending paths as one
index run limited to them (``RagService.index(paths=...)``: scan those paths, ``rag.plan_files``
with a scope, chunk, embed, ``rag.replace_files``), the same SQL bookkeeping as ``rag index``.
It asks these of an ``IndexService``: the part of ``RagService`` it uses, not the service module;
what kind of source it watches it asks of the source's ``rag.sources.base.Source``, never of the
kind's name.

- Debounce: watchfiles hands over a batch once the folder was quiet for ``QUIET_MS``; a burst
  (a ``git checkout``) is one batch, and paths seen while a sync runs form the next one.
- A ``.gitignore`` / ``.ragignore`` change, a folder that came back, or a watch that had to
  restart syncs the whole source (a full scan; unchanged files are not read).
- A folder deleted or renamed: said once, re-checked every ``MISSING_CHECK_S``; the other
  sources go on. The OS watch limit: said once, then a stat scan every ``STAT_SCAN_S``.
- Another process indexing the source: the sync waits for its lock, silently. The database
  gone: said once, retried until it answers (each sync opens its own connection).
- A source without a folder on this machine is polled on a thread of its own every
  ``Source.poll_interval`` seconds (``git_poll_s``, ``confluence_poll_s``; 0: not watched) and
  synced whole when the poll says it changed (a git branch fetched and moved) or cannot tell
  (a Confluence sync lists the pages' versions and fetches only changed ones).
- ``stop()`` ends the threads within a ``QUIET_MS`` step; ``rag watch`` turns SIGINT/SIGTERM
  into KeyboardInterrupt, so a sync under way stops between per-file transactions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from rag import sqlapi
from rag.config import SourceSpec
from rag.errors import DatabaseError, RagError, SourceBusyError, first_line
from rag.schemas import IndexOutput, WatchedSource, WatchEvent, WatchStatus
from rag.sources.base import PollIntervals, Source
from rag.sources.ignore import ALWAYS_SKIPPED_DIRS, GITIGNORE, RAGIGNORE, is_editor_artefact

if TYPE_CHECKING:
    from rag.db import Conn

log = logging.getLogger(__name__)

QUIET_MS = 150  # a batch is handed over after this long without events (and the stop flag read)
MAX_BATCH_MS = 5_000  # ... or after this long of continuous events
MISSING_CHECK_S = 2.0
STAT_SCAN_S = 30.0
RETRY_S = 1.0  # a busy source or an unreachable database is tried again after this long
FAILED_RETRY_S = 30.0  # a sync that failed otherwise (a bug, a source that cannot be indexed)
FULL_SYNC_ABOVE = 10_000  # more changed paths than this: a full scan is as cheap as checking each
PRESENCE_CHECK_S = 10.0  # how often the connection that shows the watched sources is checked
WATCH_LIMIT_MESSAGE = "OS file watch limit reached"

Emit = Callable[[WatchEvent], None]
State = Literal["starting", "watching", "missing", "stat-scan"]


class IndexService(Protocol):
    """What a watcher needs of the application layer: index a source (or only the paths that
    changed in it), the source a spec defines (how it is watched), and a connection of its own."""

    def index(self, spec: SourceSpec, *, paths: Collection[str] | None = ...,
              fetch: bool = ...) -> IndexOutput: ...

    def source(self, spec: SourceSpec) -> Source: ...

    def new_connection(self) -> Conn: ...


@dataclass
class _Watched:
    spec: SourceSpec
    source: Source
    root: Path | None  # its folder, watched by events; None: polled
    state: State = "starting"
    pending: set[str] = field(default_factory=set)
    full: bool = True  # the next sync scans the whole source (first one: catch up)
    retry_at: float = 0.0
    last_sync: datetime | None = None
    last_event: WatchEvent | None = None
    syncs: int = 0


class Watcher:
    """Watches sources and syncs their changed files; ``run`` until ``stop``."""

    def __init__(self, service: IndexService, specs: Iterable[SourceSpec], emit: Emit | None = None,
                 *, git_poll_s: float = 0, confluence_poll_s: float = 0) -> None:
        self.service = service
        # Sources without a folder are polled this often, by kind (0: not watched).
        self._polls = PollIntervals(git=git_poll_s, confluence=confluence_poll_s)
        self._emit = emit or (lambda event: None)
        self._sources: dict[str, _Watched] = {}
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._db_down = False
        self._presence = _Presence(service)
        for spec in specs:
            self.add(spec)

    # -- what the front ends see ---------------------------------------------

    def status(self) -> WatchStatus:
        with self._lock:
            return WatchStatus(sources=[
                WatchedSource(name=s.spec.name, path=s.spec.location, state=s.state, last_sync_at=s.last_sync,
                              pending_changes=len(s.pending), full_sync_pending=s.full, syncs=s.syncs,
                              last_sync=s.last_event)
                for s in self._sources.values()])

    def add(self, spec: SourceSpec) -> None:
        """Watch one more source (its first sync catches up with the folder); one without a
        folder is polled every ``poll_interval`` seconds instead, and not watched when that is 0."""
        source = self.service.source(spec)
        folder = source.folder()
        if folder is None and not source.poll_interval(self._polls):
            return
        with self._lock:
            if spec.name in self._sources:
                return
            watched = _Watched(spec, source, folder)
            self._sources[spec.name] = watched
            self._lock.notify_all()
            started = self._started  # else start() watches it with the others
        if started:
            self._start_thread(watched)

    # -- lifetime --------------------------------------------------------------

    def start(self) -> None:
        """Start the watch threads (``run`` does the syncing)."""
        with self._lock:
            sources = list(self._sources.values())
            self._started = True
        for source in sources:
            self._start_thread(source)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._lock.notify_all()

    def join(self, timeout: float = 1.0) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def run(self) -> None:
        """Sync sources with pending changes until ``stop``; starts the watch threads first."""
        self.start()
        try:
            while not self._stop.is_set():
                source = self._next_due()
                if source is not None:
                    self._sync(source)
                with self._lock:
                    synced = [s.spec.name for s in self._sources.values() if s.syncs]
                self._presence.keep(synced)
        finally:
            self.stop()
            self._presence.close()
            self.join()

    def _start_thread(self, source: _Watched) -> None:
        work = self._watch if source.root is not None else self._poll
        thread = threading.Thread(target=work, args=(source,), name=f"rag-watch-{source.spec.name}",
                                  daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- collecting changes (one thread per source) ------------------------------

    def _watch(self, source: _Watched) -> None:
        # RustNotify is watchfiles' engine under ``watch()``: used directly, the catch-up sync
        # starts once the watch is in place, so no event falls between the two.
        from watchfiles._rust_notify import RustNotify

        assert source.root is not None
        folder, root = source.root, str(source.root)
        while not self._stop.is_set():
            if not folder.is_dir():
                self._set_state(source, "missing", f"folder {folder} is gone (deleted or renamed); "
                                "watching for it to come back")
                self._stop.wait(MISSING_CHECK_S)
                continue
            if source.state == "stat-scan":  # the OS watch limit was reached
                self._mark_full(source)
                self._stop.wait(STAT_SCAN_S)
                continue
            try:
                with RustNotify([root], False, False, 300, True, True) as notify:
                    self._set_state(source, "watching")
                    while not self._stop.is_set():
                        changes = notify.watch(MAX_BATCH_MS, QUIET_MS, 1_000, self._stop)
                        if isinstance(changes, set):
                            self._add_paths(source, folder, (path for _, path in changes))
                        if changes == "stop" or not folder.is_dir():
                            break
            except Exception as exc:
                if WATCH_LIMIT_MESSAGE in str(exc):
                    self._set_state(source, "stat-scan", f"{WATCH_LIMIT_MESSAGE} (raise "
                                    "fs.inotify.max_user_watches); scanning the folder every "
                                    f"{STAT_SCAN_S:.0f} s instead")
                elif folder.is_dir():
                    self._event(source, WatchEvent(
                        source=source.spec.name, event="error",
                        message=f"watching stopped: {first_line(exc)}; restarting"))
                    self._stop.wait(MISSING_CHECK_S)
            self._mark_full(source)  # events between two watches are unknown: sync it whole

    def _poll(self, watched: _Watched) -> None:
        """A source without a folder: polled every ``poll_interval`` seconds; a poll that finds it
        changed (a git branch fetched and moved) or cannot tell (a Confluence listing is its own
        check) syncs it whole (a sync reads only the documents whose size or mtime changed)."""
        interval = watched.source.poll_interval(self._polls)
        version: str | None = None
        while not self._stop.is_set():
            try:
                now = watched.source.poll()
            except RagError as exc:
                self._event(watched, WatchEvent(source=watched.spec.name, event="error",
                                                message=f"{first_line(exc)}; trying again later"))
            else:
                self._set_state(watched, "watching")  # syncs start once the poll succeeded (a clone is there)
                if now is None or now != version:
                    version = now
                    self._mark_full(watched)
            self._stop.wait(interval)

    def _add_paths(self, source: _Watched, folder: Path, paths: Iterable[str]) -> None:
        relative = set()
        for path in paths:
            try:
                rel = Path(path).relative_to(folder).as_posix()
            except ValueError:
                continue
            if rel == "." or not _relevant(rel):
                continue
            if rel.rsplit("/", 1)[-1] in (GITIGNORE, RAGIGNORE):
                source.full = True  # the rules changed: re-plan the whole source
            else:
                relative.add(rel)
        if relative or source.full:
            with self._lock:
                source.pending |= relative
                self._lock.notify_all()

    def _mark_full(self, source: _Watched) -> None:
        with self._lock:
            source.full = True
            self._lock.notify_all()

    def _set_state(self, source: _Watched, state: State, message: str | None = None) -> None:
        if source.state == state:
            return
        was = source.state
        source.state = state
        if was == "starting" and state == "watching":
            message = f"watching {source.spec.location}"
        elif was == "missing" and state in ("watching", "stat-scan"):
            message = f"folder {source.root} is back; syncing it whole"
            self._mark_full(source)
        if message:
            kind = "watching" if state == "starting" else state
            self._event(source, WatchEvent(source=source.spec.name, event=kind, message=message))

    # -- syncing (the thread of ``run``) -------------------------------------------

    def _next_due(self) -> _Watched | None:
        with self._lock:
            while not self._stop.is_set():
                now = time.monotonic()
                due = [s for s in self._sources.values() if (s.pending or s.full) and s.state != "missing"
                       and s.state != "starting" and s.retry_at <= now]
                if due:
                    return min(due, key=lambda s: s.retry_at)
                waits = [s.retry_at - now for s in self._sources.values()
                         if (s.pending or s.full) and s.retry_at > now]
                self._lock.wait(min([*waits, PRESENCE_CHECK_S]))
                if not waits:
                    return None  # a quiet moment: run() checks the presence connection
        return None

    def _sync(self, source: _Watched) -> None:
        with self._lock:
            paths, full = source.pending, source.full or len(source.pending) > FULL_SYNC_ABOVE
            source.pending, source.full = set(), False
        started = time.monotonic()
        try:
            # A git source's clone is fetched by its poll thread: the sync only scans it.
            out = self.service.index(source.spec, paths=None if full else paths, fetch=False)
        except SourceBusyError:
            self._retry_later(source, paths, full)  # another run holds the lock: wait for it quietly
            return
        except DatabaseError as exc:
            if not self._db_down:
                self._db_down = True
                self._event(source, WatchEvent(
                    source=source.spec.name, event="error",
                    message=f"{first_line(exc)}; retrying until the database answers"))
            self._retry_later(source, paths, full)
            return
        except Exception as exc:  # one source's failure never stops the watcher
            if source.root is not None and not source.root.is_dir():
                self._retry_later(source, paths, True)  # the watch thread says it is gone
                return
            if not isinstance(exc, RagError):
                log.debug("sync of %s failed", source.spec.name, exc_info=True)
            message = f"sync failed: {first_line(exc)}; syncing it whole again in {FAILED_RETRY_S:.0f} s"
            if source.last_event is None or source.last_event.message != message:  # said once
                self._event(source, WatchEvent(source=source.spec.name, event="error", message=message))
            self._retry_later(source, set(), True, FAILED_RETRY_S)
            return
        if self._db_down:
            self._db_down = False
            self._event(source, WatchEvent(source=source.spec.name, event="watching",
                                           message="the database answers again"))
        event = WatchEvent(
            source=source.spec.name, event="sync", chunks_added=out.chunks_added,
            chunks_removed=out.chunks_removed, files=out.new + out.changed + out.deleted,
            seconds=round(time.monotonic() - started, 3), full=full, errors=out.file_errors)
        with self._lock:
            source.last_sync = datetime.now(UTC)
            source.syncs += 1
        if event.files or event.errors or event.chunks_added or event.chunks_removed:
            self._event(source, event)
        else:
            source.last_event = event

    def _retry_later(self, source: _Watched, paths: set[str], full: bool, delay: float = RETRY_S) -> None:
        with self._lock:
            source.pending |= paths
            source.full = source.full or full
            source.retry_at = time.monotonic() + delay

    def _event(self, source: _Watched, event: WatchEvent) -> None:
        source.last_event = event
        try:
            self._emit(event)
        except Exception:  # a front end's printing must not stop the watcher
            log.exception("reporting a watch event failed")


class _Presence:
    """A connection holding ``rag.watch_source`` for each watched source, so that ``rag status``
    in any process lists them; re-opened (and the sources marked again) after the database
    restarted, checked every ``PRESENCE_CHECK_S``."""

    def __init__(self, service: IndexService) -> None:
        self._service = service
        self._conn: Conn | None = None
        self._held: set[str] = set()
        self._checked = 0.0

    def keep(self, names: list[str]) -> None:
        import psycopg

        check = time.monotonic() - self._checked >= PRESENCE_CHECK_S
        if not check and self._held.issuperset(names):
            return
        try:
            if self._conn is not None and check:
                self._checked = time.monotonic()
                self._conn.execute("SELECT 1")
            if self._conn is None or self._conn.closed:
                self._conn, self._held = self._service.new_connection(), set()
            for name in names:
                if name not in self._held and sqlapi.watch_source(self._conn, name):
                    self._held.add(name)
        except (psycopg.Error, RagError) as exc:
            log.debug("the watch presence connection failed: %s", first_line(exc))
            self.close()

    def close(self) -> None:
        conn, self._conn, self._held = self._conn, None, set()
        if conn is not None:
            try:
                conn.close()
            except Exception:  # a dead connection may complain on close; nothing to do
                log.debug("closing the presence connection failed", exc_info=True)


def _relevant(rel_path: str) -> bool:
    """Paths worth a sync: not inside .git, node_modules and the like, not editor artefacts."""
    parts = rel_path.split("/")
    return not (any(part in ALWAYS_SKIPPED_DIRS for part in parts) or is_editor_artefact(parts[-1]))


def describe(event: WatchEvent) -> str:
    """One line per event: ``app: +3 -1 chunks, 2 files, 0.4 s``."""
    if event.event != "sync":
        return f"{event.source}: {event.message}"
    line = (f"{event.source}: +{event.chunks_added:,} -{event.chunks_removed:,} chunks, "
            f"{event.files:,} file{'s' if event.files != 1 else ''}, {event.seconds:.1f} s")
    if event.errors:
        shown = "; ".join(f"{e.path}: {e.error}" for e in event.errors[:3])
        more = f" (+{len(event.errors) - 3} more)" if len(event.errors) > 3 else ""
        line += f" ({len(event.errors)} error{'s' if len(event.errors) != 1 else ''}: {shown}{more})"
    return line

