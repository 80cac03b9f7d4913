"""How an index run reports itself on the terminal: the lines of the original design
(found/excluded, changed/unchanged, chunks, an embedding bar, totals, time), with a
rich progress bar on a terminal and plain lines otherwise. Everything goes to stderr
so ``--json`` output on stdout stays machine-readable.
"""

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from rag.schemas import IndexOutput
from rag.terminal import printable, printable_name


def plural(count: int, noun: str) -> str:
    """``1 file``, ``2 files``, ``1,200 chunks``."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


class _RateColumn(ProgressColumn):
    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        if not task.speed:
            return Text("")
        if task.speed < 1:  # (an LLM writing contextual text)
            return Text(f"{1 / task.speed:,.1f} s/{self.unit}")
        return Text(f"{task.speed:,.0f} {self.unit}s/s")


class _OnceStarted(ProgressColumn):
    """``column`` once the first batch is embedded; before it (the model is loading, or the
    provider answering its first request) a line that says so instead of ``0/N -:--:--``."""

    def __init__(self, column: ProgressColumn, waiting: str = "") -> None:
        super().__init__()
        self.column, self.waiting = column, waiting

    def render(self, task: Task) -> Text:
        if task.completed:
            rendered = self.column.render(task)
            return rendered if isinstance(rendered, Text) else Text(str(rendered))
        return Text(self.waiting)


class TerminalReporter:
    def __init__(self, source: str, *, quiet: bool = False) -> None:
        self.console = Console(file=sys.stderr, highlight=False, soft_wrap=True)
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._plain_total = 0
        self._plain_done = 0
        self._plain_next = 0
        self._label = ""
        self._say(f"Indexing {source}...")

    def _say(self, line: str) -> None:
        if not self.quiet:
            self.console.print(printable(line), markup=False)

    def scanned(self, found: int, skipped: dict[str, int]) -> None:
        self._say(f"  Scanning files: {plural(found, 'file')} found "
                  f"({sum(skipped.values()):,} excluded by filters)")

    def planned(self, to_index: int, unchanged: int, deleted: int) -> None:
        self._say(f"  Changed: {plural(to_index, 'file')} "
                  f"({unchanged:,} unchanged, skipped; {deleted:,} deleted)")

    def chunked(self, chunks: int, files: int) -> None:
        self._say(f"  Chunking: {plural(chunks, 'chunk')} from {plural(files, 'file')}")

    def contextualizing_started(self, calls: int) -> None:
        self._say(f"  Contextual text: {plural(calls, 'chunk')} to ask the LLM about")
        self._start_bar("Contextual text", calls, "waiting for the LLM...", "chunk")

    def contextualized(self, count: int) -> None:
        self._advance(count)

    def embedding_started(self, total: int) -> None:
        self._start_bar("Embedding", total, "loading the model...", "chunk")

    def embedded(self, count: int) -> None:
        self._advance(count)

    def _start_bar(self, label: str, total: int, waiting: str, unit: str) -> None:
        """A phase counted in units (contextual texts, then embeddings): a bar on a terminal, else a
        line at every tenth done."""
        self._stop_bar()
        self._label = label
        if self.quiet:
            return
        # More texts than chunks: a document's chunk is also embedded passage by passage.
        self._say(f"  Embedding: {plural(total, 'text')} without a stored vector (chunks, and the passages "
                  "of document chunks)")
        if self.console.is_terminal:
            self._progress = Progress(
                TextColumn(f"  {label}:"), _OnceStarted(BarColumn(), waiting),
                _OnceStarted(MofNCompleteColumn()), _RateColumn(unit),
                _OnceStarted(TimeRemainingColumn()),
                console=self.console, transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(label, total=total)
        else:
            self._plain_total, self._plain_done = total, 0
            self._plain_next = max(1, total // 10)

    def _advance(self, count: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, count)
        elif self._plain_total and not self.quiet:
            self._plain_done += count
            if self._plain_done >= self._plain_next or self._plain_done >= self._plain_total:
                done = min(self._plain_done, self._plain_total)
                self._say(f"  {self._label}: {done:,}/{self._plain_total:,}")
                self._plain_next = self._plain_done + max(1, self._plain_total // 10)

    def __enter__(self) -> "TerminalReporter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop_bar()

    def _stop_bar(self) -> None:
        """The bar's last frame stays above what follows (stopped later, rich redraws it below)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def finished(self, summary: IndexOutput) -> None:
        self._stop_bar()
        self._say(
            f"  Total: {summary.chunks_total:,} chunks (+{summary.chunks_added:,} new, "
            f"-{summary.chunks_removed:,} removed); embedded {summary.embedded:,}, reused {summary.reused:,}"
        )
        if summary.contextualized or summary.contextual_reused:
            self._say(f"  Contextual text: {summary.contextualized:,} written by the LLM, "
                      f"{summary.contextual_reused:,} set without asking it "
                      "(cached, or removed: context none)")
        for error in summary.file_errors:
            self._say(f"  Error: {printable_name(error.path)}: {error.error}")
        for warning in summary.file_warnings:
            self._say(f"  Warning: {printable_name(warning.path)}: {warning.warning}")
        for message in summary.warnings:
            self._say(f"  Warning: {message}")
        self._say(f"  Time: {summary.seconds:.1f}s")
