"""The peers hybrid search is measured against in ``make eval``, all over the seed design's windows.

- ``seed-1000/200``: the seed design: fixed 1000-character windows
  overlapping by 200, dense retrieval only, exact cosine in memory;
- ``bm25-1000/200``: Okapi BM25 (k1 1.2, b 0.75, bm25s' default tokenizer:
  lower-cased words of two or more characters, English stop words dropped,
  no stemming) over the same windows; on a Russian set (``russian=True``),
  fairly, Russian stop words dropped too and every word stemmed by the Snowball
  stemmer of its script (``snowballstemmer``: Russian, English), ё as е;
- ``rrf-1000/200``: a naive reciprocal rank fusion (k 60, equal weights) of
  the dense and the BM25 rankings, each cut at ``FUSION_DEPTH``;
- ``bm25stem-40lines``: Okapi BM25 as above over windows of 40 lines (no
  overlap), every word stemmed by the Snowball stemmer of its script and the
  stop words of both languages dropped, on every set: the held-out Russian
  corpus's strongest peer (issue #53).

``score_window_rankings`` scores any ranking of the windows with
``rag.evaluation``'s relevance rule on their line spans. A baseline, not
product code.
"""

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import snowballstemmer
from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_RUSSIAN

from rag.chunking.markdown import markdown_sections
from rag.chunking.model import count_tokens
from rag.errors import RagError
from rag.evaluation import DEPTH, Answer, EvalCase, Metrics, gains, is_relevant, score
from rag.providers import Embedder
from rag.providers.base import ProgressCallback
from rag.sources.scan import scan_source

SEED_MODE, BM25_MODE, RRF_MODE = "seed-1000/200", "bm25-1000/200", "rrf-1000/200"
LINES_MODE = "bm25stem-40lines"
LINES_PER_WINDOW = 40
FUSION_DEPTH = 1000
RRF_K = 60


# --- the seed design: fixed character windows, dense only -----------------------


@dataclass(frozen=True)
class Window:
    path: str
    start_line: int
    end_line: int
    text: str


def char_windows(text: str, path: str, size: int = 1000, overlap: int = 200) -> list[Window]:
    """``text`` cut into ``size``-character windows starting every ``size - overlap`` characters;
    blank windows are dropped."""
    if size < 1 or not 0 <= overlap < size:
        raise RagError("window size must be positive and overlap between 0 and size - 1")
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    windows = []
    for start in range(0, max(len(text) - overlap, 1), size - overlap):
        piece = text[start:start + size]
        if piece.strip():
            first = bisect.bisect_left(newlines, start) + 1
            last = bisect.bisect_left(newlines, start + len(piece) - 1) + 1
            windows.append(Window(path, first, last, piece))
    return windows


def line_windows(text: str, path: str, size: int = LINES_PER_WINDOW) -> list[Window]:
    """``text`` cut into windows of ``size`` lines, one after the other; blank windows are dropped."""
    lines = text.split("\n")
    return [Window(path, first + 1, min(first + size, len(lines)), "\n".join(lines[first:first + size]))
            for first in range(0, len(lines), size) if "\n".join(lines[first:first + size]).strip()]


def folder_windows(root: Path, size: int = 1000, overlap: int = 200, *, lines: bool = False) -> list[Window]:
    """Windows of every file an index of ``root`` would hold (same selection rules), read as text:
    of ``size`` characters overlapping by ``overlap``, or with ``lines`` of ``LINES_PER_WINDOW`` lines."""
    windows = []
    for scanned in scan_source(root).files:
        text = scanned.abs_path.read_bytes().decode("utf-8", errors="replace")
        windows.extend(line_windows(text, scanned.path) if lines else char_windows(text, scanned.path, size, overlap))
    return windows


def seed_baseline(
    root: Path, cases: Sequence[EvalCase], embedder: Embedder, progress: ProgressCallback | None = None,
) -> Metrics:
    """Metrics of the seed design on the folder ``root``: 1000/200 windows ranked by cosine similarity."""
    windows = folder_windows(root)
    if not windows:
        raise RagError(f"{root}: no indexable files for the baseline")
    rankings = dense_window_rankings(windows, cases, embedder, progress)
    return score_window_rankings(root, windows, cases, rankings)


def dense_window_rankings(
    windows: Sequence[Window], cases: Sequence[EvalCase], embedder: Embedder,
    progress: ProgressCallback | None = None, depth: int = DEPTH,
) -> list[list[int]]:
    """For each case, the indexes of the ``depth`` windows most similar to its query (exact cosine)."""
    matrix = np.asarray(embedder.embed_documents([w.text for w in windows], progress), dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    rankings = []
    for case in cases:
        similarity = matrix @ np.asarray(embedder.embed_query(case.query), dtype=np.float32)
        rankings.append(np.argsort(-similarity, kind="stable")[:depth].tolist())
    return rankings


def score_window_rankings(
    root: Path, windows: Sequence[Window], cases: Sequence[EvalCase], rankings: Sequence[Sequence[int]],
) -> Metrics:
    """Metrics of ranked windows (one list of window indexes per case) of the folder ``root``.

    Windows carry only line spans, so a headerPath answer is judged by the lines
    of its section (subsections included) in the Markdown file under ``root``.
    """
    sections = _SectionSpans(root)
    scored = []
    for case, ranking in zip(cases, rankings, strict=True):
        hits = [(windows[i].path, {"startLine": windows[i].start_line, "endLine": windows[i].end_line})
                for i in ranking[:DEPTH]]
        answers = [sections.as_lines(a) for a in case.relevant]
        tokens = [count_tokens(windows[i].text) for i in ranking[:DEPTH]]
        scored.append((gains(hits, answers), len(answers), tokens))
    return score(scored)


class _SectionSpans:
    """Line spans of Markdown sections by headerPath, each file parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.by_file: dict[str, list[tuple[str, int, int]]] = {}

    def as_lines(self, answer: Answer) -> Answer:
        """A headerPath answer as the span from its section's first line to its last subsection's last."""
        if answer.header_path is None:
            return answer
        spans = [(start, end) for header_path, start, end in self._sections(answer.path)
                 if is_relevant(answer.path, {"headerPath": header_path}, answer)]
        if not spans:
            return answer  # no such section: no window can match it
        return Answer(answer.path, min(s for s, _ in spans), max(e for _, e in spans))

    def _sections(self, path: str) -> list[tuple[str, int, int]]:
        if path not in self.by_file:
            file = self.root / path
            text = file.read_text(encoding="utf-8", errors="replace") if file.is_file() else ""
            self.by_file[path] = markdown_sections(text)
        return self.by_file[path]


# --- BM25 and naive fusion over the windows -------------------------------------


class RussianAwareStemmer:
    """A word's Snowball stem in the language of its script: Cyrillic Russian, the rest English."""

    def __init__(self) -> None:
        self._russian = snowballstemmer.stemmer("russian")
        self._english = snowballstemmer.stemmer("english")

    def stemWords(self, words: Sequence[str]) -> list[str]:  # (the name bm25s calls)
        return [self._stem(word) for word in words]

    def _stem(self, word: str) -> str:
        word = word.replace("ё", "е")
        cyrillic = any("\u0400" <= letter <= "\u04ff" for letter in word)
        return str((self._russian if cyrillic else self._english).stemWord(word))


def bm25_rankings(windows: Sequence[Window], queries: Sequence[str], depth: int = FUSION_DEPTH,
                  *, russian: bool = False) -> list[list[int]]:
    """For each query, the indexes of the windows with a positive BM25 score, best first, at most
    ``depth``; ``russian``: with Russian stop words and stems too."""
    tokenizing: dict[str, Any] = {"show_progress": False}
    if russian:
        tokenizing.update(stopwords=[*STOPWORDS_EN, *STOPWORDS_RUSSIAN], stemmer=RussianAwareStemmer())
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(bm25s.tokenize([w.text for w in windows], **tokenizing), show_progress=False)
    rankings = []
    for tokens in bm25s.tokenize(list(queries), return_ids=False, **tokenizing):
        known = [t for t in tokens if t in retriever.vocab_dict]
        scores = retriever.get_scores(known) if known else np.zeros(len(windows))
        order = np.argsort(-scores, kind="stable")[:depth]
        rankings.append([int(i) for i in order if scores[i] > 0])
    return rankings


def rrf(rankings: Sequence[Sequence[Sequence[int]]], k: int = RRF_K) -> list[list[int]]:
    """Per query, the items of several rankings ordered by the sum of 1 / (k + rank), rank from 1;
    ties keep the order in which items were first met."""
    fused = []
    for per_query in zip(*rankings, strict=True):
        totals: dict[int, float] = {}
        for ranking in per_query:
            for rank, item in enumerate(ranking, 1):
                totals[item] = totals.get(item, 0.0) + 1 / (k + rank)
        fused.append(sorted(totals, key=lambda item: -totals[item]))
    return fused
