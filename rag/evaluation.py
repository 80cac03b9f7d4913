"""Retrieval evaluation (``rag eval FILE``): how well each search mode finds known answers.

Owns the evaluation file format, the relevance rule, the metrics, running the
search modes over a file of cases and the table that puts the modes side by
side. The baselines ``make eval`` measures against live in ``eval/peers.py``.

File format: JSON lines, one case per line; blank lines and lines starting
with ``#`` are skipped::

    {"id": "q1", "query": "split a camelCase name into words",
     "relevant": [{"path": "src/text.py", "startLine": 10, "endLine": 24}]}
    {"id": "q2", "query": "how do I retry a failed upload",
     "relevant": [{"path": "docs/upload.md", "headerPath": "# Upload > ## Retries"}],
     "source": "docs"}

- ``id``: a string or number naming the case in messages.
- ``query``: the search text.
- ``relevant``: one or more answers, each one of
  ``{"path", "startLine", "endLine"}`` (a line span, 1-based, inclusive),
  ``{"path", "headerPath"}`` (a Markdown section) or ``{"path"}`` (a whole file).
  Paths are relative to the source root, as search results show them.
- ``source`` (optional): search only this source.

A hit is relevant to an answer when it has the same path and: its
``startLine``..``endLine`` overlaps the answer's span; or its headerPath equals
the answer's or is nested below it (``# A > ## B`` is below ``# A``); or the
answer names only the path.

Metrics over the top 10 hits, relevance binary, averaged over the cases:
Recall@k is the share of cases with a relevant hit among the first k
(k = 1, 5, 10); MRR@10 the mean of 1/rank of the first relevant hit (0 if
none); nDCG@10 counts a hit as a gain when it matches an answer no earlier hit
matched, so several chunks of one answer count once, and divides by the ideal
DCG of min(answers, 10) gains. R@1000tok is the share of cases whose first
relevant hit ends within the first 1,000 tokens of results (``count_tokens``
of each hit's text, read whole, in rank order): what a reader with that budget
finds, which larger chunks or windows cannot buy by overlapping more answers.

Modes: ``bm25`` (keyword arm only), ``vector`` (vector arm only), ``hybrid``
(both, fused, no reranker), ``hybrid+rerank`` (with the configured reranker).
Modes that cannot run are skipped with a note: the rerank mode when the
reranker is ``none``, vector and hybrid when the index has no vectors for the
configured model.
"""

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from rag.chunking.markdown import HEADER_SEPARATOR
from rag.chunking.model import count_tokens
from rag.errors import RagError
from rag.search import Searcher, SearchRequest

MODES = ("bm25", "vector", "hybrid", "hybrid+rerank")
CUTOFFS = (1, 5, 10)
DEPTH = 10  # hits scored per query
TOKEN_BUDGET = 1000  # tokens of results read for the size-neutral recall


@dataclass(frozen=True)
class Answer:
    path: str
    start_line: int | None = None
    end_line: int | None = None
    header_path: str | None = None


@dataclass(frozen=True)
class EvalCase:
    id: str
    query: str
    relevant: tuple[Answer, ...]
    source: str | None = None


@dataclass(frozen=True)
class Metrics:
    queries: int
    recall: dict[int, float]  # cutoff k -> share of cases with a relevant hit in the top k
    mrr: float
    ndcg: float
    within_budget: float  # share of cases with a relevant hit within the first TOKEN_BUDGET tokens

    def as_dict(self) -> dict[str, float | int]:
        return {"queries": self.queries, **{f"recall@{k}": v for k, v in self.recall.items()},
                f"mrr@{DEPTH}": self.mrr, f"ndcg@{DEPTH}": self.ndcg,
                f"recall@{TOKEN_BUDGET}tokens": self.within_budget}


@dataclass(frozen=True)
class QueryResult:
    """One case in one mode: the rank of its first relevant hit (None: not in the top DEPTH)."""

    id: str
    query: str
    rank: int | None
    ndcg: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "rank": self.rank, f"ndcg@{DEPTH}": self.ndcg}


@dataclass
class Evaluation:
    metrics: dict[str, Metrics] = field(default_factory=dict)  # by mode, in the order run
    notes: list[str] = field(default_factory=list)
    queries: dict[str, list[QueryResult]] = field(default_factory=dict)  # by mode: each case's result

    def as_dict(self) -> dict[str, Any]:
        return {"metrics": {mode: m.as_dict() for mode, m in self.metrics.items()}, "notes": self.notes,
                "queries": {mode: [q.as_dict() for q in rows] for mode, rows in self.queries.items()}}


# --- the file -------------------------------------------------------------------


def load_cases(path: Path) -> list[EvalCase]:
    """The cases of an evaluation file; a bad line is a RagError naming ``file:line``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RagError(f"{path}: cannot read the evaluation file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise RagError(f"{path}: not UTF-8 text; the evaluation file is JSON lines") from None
    cases = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            cases.append(parse_case(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise RagError(f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:
            raise RagError(f"{path}:{number}: {exc}") from None
    if not cases:
        raise RagError(f"{path}: no cases; expected JSON lines like "
                       '{"id": "q1", "query": "...", "relevant": [{"path": "a.py"}]}')
    return cases


def parse_case(item: Any) -> EvalCase:
    """One case from its decoded JSON; ValueError says what is wrong."""
    if not isinstance(item, dict):
        raise ValueError('expected a JSON object with "id", "query" and "relevant"')
    unknown = sorted(set(item) - {"id", "query", "relevant", "source"})
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; a case has id, query, relevant and optionally source")
    case_id, query, relevant, source = (item.get(k) for k in ("id", "query", "relevant", "source"))
    if not isinstance(case_id, str | int) or isinstance(case_id, bool) or str(case_id) == "":
        raise ValueError('"id" must be a non-empty string or a number')
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f'case {case_id}: "query" must be a non-empty string')
    if not isinstance(relevant, list) or not relevant:
        raise ValueError(f'case {case_id}: "relevant" must be a non-empty list of answers')
    if source is not None and (not isinstance(source, str) or not source):
        raise ValueError(f'case {case_id}: "source" must be a source name')
    answers = tuple(_parse_answer(a, case_id) for a in relevant)
    return EvalCase(str(case_id), query, answers, source)


def _parse_answer(item: Any, case_id: str | int) -> Answer:
    shape = '{"path", "startLine", "endLine"}, {"path", "headerPath"} or {"path"}'
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
        raise ValueError(f"case {case_id}: each answer must be {shape}")
    keys = set(item) - {"path"}
    if keys == {"startLine", "endLine"}:
        start, end = item["startLine"], item["endLine"]
        if not all(type(n) is int for n in (start, end)) or not 1 <= start <= end:
            raise ValueError(f"case {case_id}: startLine and endLine must be line numbers, start <= end")
        return Answer(item["path"], start_line=start, end_line=end)
    if keys == {"headerPath"}:
        if not isinstance(item["headerPath"], str):
            raise ValueError(f"case {case_id}: headerPath must be a string like '# Guide > ## Install'")
        return Answer(item["path"], header_path=item["headerPath"])
    if not keys:
        return Answer(item["path"])
    raise ValueError(f"case {case_id}: each answer must be {shape}, not keys {sorted(item)}")


# --- relevance and metrics ------------------------------------------------------


def is_relevant(path: str, coordinates: Mapping[str, Any], answer: Answer) -> bool:
    """Whether a hit at ``path`` with these coordinates (startLine, endLine, headerPath, and
    headerPaths: the sections a merged chunk holds) is the answer."""
    if path != answer.path:
        return False
    if answer.header_path is not None:
        # A chunk of merged sections holds the answer when one of its sections is it.
        found = [coordinates.get("headerPath"), *coordinates.get("headerPaths", ())]
        wanted = answer.header_path
        below = wanted + HEADER_SEPARATOR
        return any(isinstance(f, str) and (f == wanted or (wanted != "" and f.startswith(below)))
                   for f in found)
    if answer.start_line is not None and answer.end_line is not None:
        start, end = coordinates.get("startLine"), coordinates.get("endLine")
        if not isinstance(start, int) or not isinstance(end, int):
            return False
        return start <= answer.end_line and answer.start_line <= end
    return True


def gains(hits: Iterable[tuple[str, Mapping[str, Any]]], answers: Sequence[Answer]) -> list[bool]:
    """For each of the first ``DEPTH`` ranked hits (path, coordinates): whether it matches an
    answer that no earlier hit matched."""
    unmatched = list(answers)
    found = []
    for path, coordinates in list(hits)[:DEPTH]:
        matched = [a for a in unmatched if is_relevant(path, coordinates, a)]
        unmatched = [a for a in unmatched if a not in matched]
        found.append(bool(matched))
    return found


Scored = tuple[Sequence[bool], int, Sequence[int]]  # gains of the ranked hits, answers, each hit's tokens


def score(rankings: Sequence[Scored]) -> Metrics:
    """Metrics of several queries, each given as (gains of its ranked hits, number of answers,
    tokens of each ranked hit)."""
    if not rankings:
        raise RagError("no queries to score")
    n = len(rankings)
    first = [_first_gain(found) for found, _, _ in rankings]
    recall = {k: sum(1 for rank in first if rank is not None and rank <= k) / n for k in CUTOFFS}
    mrr = sum(1 / rank for rank in first if rank is not None) / n
    ndcg = sum(_ndcg(found, answers) for found, answers, _ in rankings) / n
    within = sum(1 for rank, (_, _, tokens) in zip(first, rankings, strict=True)
                 if rank is not None and sum(tokens[:rank]) <= TOKEN_BUDGET) / n
    return Metrics(n, recall, mrr, ndcg, within)


def _first_gain(found: Sequence[bool]) -> int | None:
    return next((rank for rank, hit in enumerate(found[:DEPTH], 1) if hit), None)


def _ndcg(found: Sequence[bool], answers: int) -> float:
    dcg = sum(1 / math.log2(rank + 1) for rank, hit in enumerate(found[:DEPTH], 1) if hit)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(answers, DEPTH) + 1))
    return dcg / ideal if ideal else 0.0


# --- running the modes ----------------------------------------------------------


def check_modes(modes: Sequence[str]) -> tuple[str, ...]:
    """The modes, validated and without repeats; RagError for an unknown one."""
    for mode in modes:
        if mode not in MODES:
            raise RagError(f"unknown evaluation mode {mode!r}; choose from {', '.join(MODES)}")
    if not modes:
        raise RagError(f"no evaluation modes; choose from {', '.join(MODES)}")
    return tuple(dict.fromkeys(modes))


def evaluate(
    searcher: Searcher,
    cases: Sequence[EvalCase],
    modes: Sequence[str] = MODES,
    *,
    source: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Evaluation:
    """Each mode's metrics over ``cases``; ``source`` restricts the cases that name none.

    ``progress`` is called with the mode's name after each case.
    """
    result = Evaluation()
    runnable = _runnable_modes(searcher, check_modes(modes), result.notes)
    for mode in runnable:
        rankings = []
        for case in cases:
            hits = _ranked(searcher, case, mode, source)
            rankings.append((gains([(path, coordinates) for path, coordinates, _ in hits], case.relevant),
                             len(case.relevant), [tokens for _, _, tokens in hits]))
            if progress is not None:
                progress(mode)
        result.metrics[mode] = score(rankings)
        result.queries[mode] = [QueryResult(case.id, case.query, _first_gain(found), _ndcg(found, answers))
                                for case, (found, answers, _) in zip(cases, rankings, strict=True)]
    return result


def _runnable_modes(searcher: Searcher, modes: tuple[str, ...], notes: list[str]) -> list[str]:
    runnable = list(modes)
    if "hybrid+rerank" in runnable and searcher.reranker.name == "none":
        runnable.remove("hybrid+rerank")
        notes.append("hybrid+rerank skipped: reranker.provider is none")
    dense = [m for m in runnable if m != "bm25"]
    if dense and not searcher.model_has_vectors():
        runnable = [m for m in runnable if m == "bm25"]
        notes.append(f"{', '.join(dense)} skipped: the index has no vectors for embedding model "
                     f"{searcher.embedder.model_id!r}")
    return runnable


Ranked = list[tuple[str, dict[str, Any], int]]  # path, coordinates, tokens of the hit's text


def _ranked(searcher: Searcher, case: EvalCase, mode: str, source: str | None) -> Ranked:
    where = case.source or source
    request = SearchRequest(
        case.query, top_k=DEPTH, sources=[where] if where else None, rerank=mode == "hybrid+rerank",
        keyword_only=mode == "bm25", vector_only=mode == "vector",
    )
    try:
        response = searcher.search(request)
    except psycopg.errors.InvalidParameterValue as exc:
        raise RagError(f"case {case.id}: {exc.diag.message_primary or exc}") from None
    return [(hit.path, {**hit.coordinates, "headerPaths": hit.header_paths or []}, count_tokens(hit.content))
            for hit in response.hits]


# --- the table ------------------------------------------------------------------


def format_table(metrics: Mapping[str, Metrics], notes: Sequence[str] = (), title: str = "") -> str:
    """The modes side by side, one row per metric, three decimals; notes below."""
    modes = list(metrics)
    queries = next(iter(metrics.values())).queries if metrics else 0
    rows = [[f"Recall@{k}", *(f"{metrics[m].recall[k]:.3f}" for m in modes)] for k in CUTOFFS]
    rows.append([f"MRR@{DEPTH}", *(f"{metrics[m].mrr:.3f}" for m in modes)])
    rows.append([f"nDCG@{DEPTH}", *(f"{metrics[m].ndcg:.3f}" for m in modes)])
    rows.append([f"R@{TOKEN_BUDGET}tok", *(f"{metrics[m].within_budget:.3f}" for m in modes)])
    header = [f"{queries} queries", *modes]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [title] if title else []
    for row in [header, *rows]:
        cells = [cell.rjust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append("  ".join([row[0].ljust(widths[0]), *cells[1:]]))
    lines.extend(f"note: {note}" for note in notes)
    return "\n".join(lines)
