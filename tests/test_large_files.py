"""Large files never abort a run: a file too large to store is its own per-file
error, batches are cut by size, a file that grew past ``maxFileSize`` since the
scan is refused when read, and minified code is recognised by its line length."""

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import rows

from rag import db, indexer, storing
from rag.config import ChunkSettings, SourceSpec
from rag.providers import NoneEmbedder
from rag.sources import folder
from rag.sources.scan import ScanResult, scan_source

SETTINGS = ChunkSettings(max_tokens=200, overlap=20, max_file_size=1_000_000)


def index(target: db.DatabaseTarget, root: Path, settings: ChunkSettings = SETTINGS) -> indexer.RunSummary:
    with db.connect(target) as conn:
        return indexer.index_source(conn, SourceSpec("big", "local", str(root)), root, NoneEmbedder(), settings)


def prose(lines: int) -> str:
    return "".join(f"Line {i} of a long document about parcels and invoices.\n" for i in range(lines))


def test_a_file_too_large_to_store_is_one_per_file_error_and_batches_are_cut_by_size(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storing, "MAX_FILE_JSON", 200_000)  # (PostgreSQL's jsonb takes 256 MB)
    monkeypatch.setattr(indexer, "BATCH_BYTES", 40_000)
    sent: list[tuple[int, int]] = []  # (files, JSON bytes) of each batch
    real_store = storing.store_batch

    def store(conn: Any, source_id: int, batch: list[bytes]) -> tuple[int, int]:
        sent.append((len(batch), sum(len(b) for b in batch)))
        return real_store(conn, source_id, batch)

    monkeypatch.setattr(storing, "store_batch", store)
    root = tmp_path / "p"
    root.mkdir()
    (root / "huge.txt").write_text(prose(2000))  # ~110 KB of text, twice that as text and chunks
    for i in range(6):
        (root / f"part{i}.md").write_text(f"# Part {i}\n\n" + prose(150))
    summary = index(rag_db, root)

    assert summary.status == "succeeded"
    assert [e["path"] for e in summary.errors] == ["huge.txt"]
    assert summary.errors[0]["error"].startswith("too large to store: its text and ")
    stored = {r["path"]: r for r in rows(rag_db, "SELECT f.path, f.error, count(c.id) AS chunks FROM rag.files f"
                                                 " LEFT JOIN rag.chunks c ON c.file_id = f.id GROUP BY f.id")}
    assert stored["huge.txt"]["chunks"] == 0 and "too large to store" in stored["huge.txt"]["error"]
    assert all(stored[f"part{i}.md"]["chunks"] > 0 for i in range(6))
    assert len(sent) > 2 and all(files == 1 or size <= 40_000 for files, size in sent)


def test_a_file_that_grew_past_the_limit_since_the_scan_is_refused_when_read(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n\nShort.\n")
    (root / "log.txt").write_text("small\n")
    real_scan = folder.scan

    def scan_then_grow(*args: Any, **kwargs: Any) -> ScanResult:
        scanned = real_scan(*args, **kwargs)
        (root / "log.txt").write_text(prose(2000))  # ~110 KB, under a 10 KB limit
        return scanned

    monkeypatch.setattr(folder, "scan", scan_then_grow)
    summary = index(rag_db, root, ChunkSettings(max_tokens=200, overlap=20, max_file_size=10_000))
    assert summary.errors == [{"path": "log.txt", "error":
                               "cannot read: grew past indexing.maxFileSize (10,000 bytes) since the scan"}]
    assert [r["path"] for r in rows(rag_db, "SELECT path FROM rag.files")] == ["notes.md"]


def test_minified_code_is_recognised_by_its_line_length_whatever_its_name(tmp_path: Path) -> None:
    code = "".join(f"function f{i}(a, b) {{\n  return a + b * {i};\n}}\n" for i in range(2000))
    (tmp_path / "app.js").write_text("/*! bundle v1 */\n" + code.replace("\n", ""))  # one 90 KB line
    (tmp_path / "site.css").write_text("".join(f".c{i}{{color:red;margin:{i}px}}" for i in range(3000)))
    (tmp_path / "plain.js").write_text(code)
    (tmp_path / "tiny.js").write_text("var a=1;" * 100)  # one line, too small to matter
    # #56: every kind but prose: a one-line .ts bundle, a one-line JSON dump (once ~2,000 chunks)
    (tmp_path / "bundle.ts").write_text(code.replace("function", "export function").replace("\n", ""))
    (tmp_path / "data.json").write_text(json.dumps({f"k{i}": i for i in range(5000)}))
    (tmp_path / "pretty.json").write_text(json.dumps({f"k{i}": i for i in range(5000)}, indent=1))
    (tmp_path / "notes.md").write_text(("One paragraph written as one long line. " * 40 + "\n\n") * 40)
    scanned = scan_source(tmp_path)
    assert scanned.skipped == {"minified": ["app.js", "bundle.ts", "data.json", "site.css"]}
    assert sorted(f.path for f in scanned.files) == ["notes.md", "plain.js", "pretty.json", "tiny.js"]
