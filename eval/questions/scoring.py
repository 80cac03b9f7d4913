"""Scoring of the ``questions`` set: hand-written developer questions answered by files or spans.

Owns the question file format, the coverage rule and the metrics; the driver
(``run.py``) ranks, this module only scores rankings.

A question file is JSON lines (``#`` lines skipped), the case format of
``rag/evaluation.py`` plus a category::

    {"id": "httpx-01", "category": "semantic", "query": "follow redirects ...",
     "relevant": [{"path": "httpx/_client.py"}]}
    {"id": "httpx-26", "category": "symbol", "query": "Client._send_handling_redirects",
     "relevant": [{"path": "httpx/_client.py", "startLine": 964, "endLine": 999}]}

Categories: ``semantic`` (what the code does), ``architecture`` (how it is
built), ``symbol`` (a bare or qualified name; its target is the definition's
span). Every target of a question weighs the same (binary gains, no secondary
grade).

A ranked hit is ``(path, startLine, endLine)``. It covers a target when the
paths are equal and, for a span target, the lines overlap. Metrics over the
top ``DEPTH`` hits:

- nDCG@10: each target found gains 1 / log2(1 + r) at the rank r of the FIRST
  hit covering it (later chunks of the same file or span gain nothing); the
  ideal DCG counts the targets that exist in the index (min(n, 10) gains at
  ranks 1..n).
- MRR@10: 1 / the rank of the first hit covering any target (0 if none).
- R@10: the share of the targets (that exist in the index) covered in the top 10.

And one check (issue #43's goal): for a behaviour (semantic) question, a test
never ranks above the implementation: ``outranked_by_tests`` is true when a test
file's hit comes before the first hit covering a target (or a test is in the
top 10 and no target is).

A project's figure is the mean over its questions; the overall figure the mean
over projects, so a large project does not outweigh a small one.
"""

import json
import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.evaluation import Answer as Target  # a relevant file, or a definition's line span

CATEGORIES = ("semantic", "architecture", "symbol")
DEPTH = 10
KEYS = {"id", "category", "query", "relevant"}


@dataclass(frozen=True)
class Question:
    id: str
    category: str
    query: str
    targets: tuple[Target, ...]


Hit = tuple[str, int | None, int | None]  # path, startLine, endLine (None: no line span)


@dataclass(frozen=True)
class Scores:
    ndcg: float
    mrr: float
    recall: float


def load_questions(path: Path) -> list[Question]:
    """The questions of one file; ValueError names ``file:line`` and what is wrong."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            questions.append(parse_question(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    return questions


def parse_question(item: Mapping[str, object]) -> Question:
    if set(item) != KEYS:
        raise ValueError(f"a question has exactly the keys {sorted(KEYS)}, not {sorted(item)}")
    case_id, category, query, relevant = item["id"], item["category"], item["query"], item["relevant"]
    if not isinstance(case_id, str) or not case_id:
        raise ValueError('"id" must be a non-empty string')
    if category not in CATEGORIES:
        raise ValueError(f"{case_id}: category must be one of {', '.join(CATEGORIES)}, not {category!r}")
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"{case_id}: query must be a non-empty string")
    if not isinstance(relevant, list) or not relevant:
        raise ValueError(f"{case_id}: relevant must be a non-empty list of targets")
    targets = tuple(_target(t, case_id) for t in relevant)
    if category == "symbol" and any(t.start_line is None for t in targets):
        raise ValueError(f"{case_id}: a symbol question's targets are spans (startLine, endLine)")
    return Question(case_id, category, query, targets)


def _target(item: object, case_id: str) -> Target:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
        raise ValueError(f'{case_id}: a target is {{"path"}} or {{"path", "startLine", "endLine"}}')
    if set(item) == {"path"}:
        return Target(item["path"])
    start, end = item.get("startLine"), item.get("endLine")
    if set(item) != {"path", "startLine", "endLine"} or not (
            type(start) is int and type(end) is int and 1 <= start <= end):
        raise ValueError(f"{case_id}: a span target needs line numbers startLine <= endLine")
    return Target(item["path"], start, end)


def covers(hit: Hit, target: Target) -> bool:
    path, start, end = hit
    if path != target.path:
        return False
    if target.start_line is None or target.end_line is None:
        return True
    return start is not None and end is not None and start <= target.end_line and target.start_line <= end


def first_ranks(hits: Sequence[Hit], targets: Iterable[Target]) -> list[int | None]:
    """For each target, the rank (from 1) of the first of the top ``DEPTH`` hits covering it."""
    top = hits[:DEPTH]
    return [next((rank for rank, hit in enumerate(top, 1) if covers(hit, t)), None) for t in targets]


def score_question(question: Question, hits: Sequence[Hit], indexed: set[str]) -> Scores | None:
    """nDCG@10, reciprocal rank and recall@10 of one ranking; None when no target is in the index."""
    present = [t for t in question.targets if t.path in indexed]
    if not present:
        return None
    ranks = first_ranks(hits, present)
    found = [r for r in ranks if r is not None]
    dcg = sum(1 / math.log2(r + 1) for r in found)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(present), DEPTH) + 1))
    reciprocal = 1 / min(found) if found else 0.0
    return Scores(dcg / ideal, reciprocal, len(found) / min(len(present), DEPTH))


def outranked_by_tests(hits: Sequence[Hit], targets: Iterable[Target], tests: Container[str]) -> bool:
    """Whether one of the top ``DEPTH`` hits whose path is in ``tests`` ranks above every hit covering a
    target."""
    for hit in hits[:DEPTH]:
        if any(covers(hit, t) for t in targets):
            return False
        if hit[0] in tests:
            return True
    return False


def mean(scores: Sequence[Scores]) -> Scores:
    n = len(scores)
    if not n:
        return Scores(math.nan, math.nan, math.nan)
    return Scores(*(sum(getattr(s, metric) for s in scores) / n for metric in ("ndcg", "mrr", "recall")))
