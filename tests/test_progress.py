"""The index run's terminal report (rag.progress): the bar, the words, the plurals."""

import io

from rich.console import Console

from rag.progress import TerminalReporter, plural
from rag.schemas import FileError, IndexOutput


def summary(errors: int) -> IndexOutput:
    return IndexOutput(
        source="s", location="/s", run_id=1, status="succeeded", seconds=1.0, files_found=1, skipped={},
        new=1, changed=0, unchanged=0, deleted=0, chunks_added=1, chunks_removed=0, chunks_total=1,
        embedded=1, reused=0, errors=errors,
        file_errors=[FileError(path="a.bin", error="binary file")] * errors, file_warnings=[])


def terminal_reporter() -> tuple[TerminalReporter, io.StringIO]:
    out = io.StringIO()
    reporter = TerminalReporter("s")
    reporter.console = Console(file=out, force_terminal=True, width=100, highlight=False, soft_wrap=True)
    return reporter, out


def test_plurals() -> None:
    assert (plural(1, "file"), plural(0, "file"), plural(1200, "chunk")) == ("1 file", "0 files", "1,200 chunks")
    reporter, out = terminal_reporter()
    reporter.quiet = False
    reporter.console = Console(file=out, force_terminal=False, width=100)
    reporter.scanned(1, {})
    reporter.chunked(1, 1)
    assert "1 file found" in out.getvalue() and "1 chunk from 1 file" in out.getvalue()


def test_the_bar_says_the_model_loads_then_stays_above_the_totals() -> None:
    reporter, out = terminal_reporter()
    with reporter:
        reporter.embedding_started(10)
        assert reporter._progress is not None
        reporter._progress.refresh()
        assert "loading the model..." in out.getvalue() and "0/10" not in out.getvalue()
        reporter.embedded(10)
        reporter.finished(summary(0))
    text = out.getvalue()
    assert "10/10" in text
    assert "Embedding" not in text[text.index("Total:"):], "the bar was drawn again below the totals"


def test_contextual_text_has_its_own_phase_before_embedding() -> None:
    reporter, out = terminal_reporter()
    reporter.console = Console(file=out, force_terminal=False, width=100)
    reporter.contextualizing_started(20)
    for _ in range(20):
        reporter.contextualized(1)
    reporter.embedding_started(4)
    reporter.embedded(4)
    done = summary(0).model_copy(update={"contextualized": 20, "contextual_reused": 3})
    reporter.finished(done)
    text = out.getvalue()
    assert "Contextual text: 20 chunks to ask the LLM about" in text
    assert "Contextual text: 2/20" in text and "Contextual text: 20/20" in text and "Embedding: 4/4" in text
    assert "Contextual text: 20 written by the LLM, 3 set without asking it" in text
