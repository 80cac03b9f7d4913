"""The ``questions`` evaluation set (eval/questions): its scoring on tiny hand-made rankings, its
words-per-file baseline, and the committed question files checked against the manifest."""

import json
import math
import sys
from pathlib import Path

import pytest

QUESTIONS = Path(__file__).resolve().parents[1] / "eval" / "questions"
sys.path.insert(0, str(QUESTIONS))

from peers import Window  # noqa: E402
from run import by_category, words_per_file  # noqa: E402
from scoring import (  # noqa: E402
    CATEGORIES,
    Question,
    Scores,
    Target,
    covers,
    first_ranks,
    load_questions,
    outranked_by_tests,
    parse_question,
    score_question,
)

A, B = Target("a.py"), Target("b.py")
INDEXED = {"a.py", "b.py", "c.py"}


def question(*targets: Target, category: str = "semantic") -> Question:
    return Question("q", category, "query", targets)


def test_ideal_ranking_scores_one_and_a_miss_zero() -> None:
    ideal = score_question(question(A, B), [("b.py", 1, 5), ("a.py", 1, 9), ("c.py", 1, 2)], INDEXED)
    assert ideal == Scores(1.0, 1.0, 1.0)
    miss = score_question(question(A, B), [("c.py", 1, 2)] * 10, INDEXED)
    assert miss == Scores(0.0, 0.0, 0.0)


def test_only_the_first_chunk_of_a_target_gains() -> None:
    # a.py's second chunk at rank 2 gains nothing; b.py gains at rank 3
    scores = score_question(question(A, B), [("a.py", 1, 9), ("a.py", 10, 20), ("b.py", 1, 5)], INDEXED)
    assert scores is not None
    assert scores.ndcg == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert (scores.mrr, scores.recall) == (1.0, 1.0)
    late = score_question(question(A), [("c.py", 1, 1), ("a.py", 1, 1)], INDEXED)
    assert late == Scores(pytest.approx(1 / math.log2(3)), 0.5, 1.0)


def test_a_test_above_the_implementation_is_caught() -> None:
    tests = {"tests/test_a.py"}
    assert outranked_by_tests([("tests/test_a.py", 1, 5), ("a.py", 1, 9)], [A], tests)
    assert not outranked_by_tests([("a.py", 1, 9), ("tests/test_a.py", 1, 5)], [A], tests)
    assert outranked_by_tests([("c.py", 1, 2), ("tests/test_a.py", 1, 5)], [A], tests), "no target found at all"
    assert not outranked_by_tests([("c.py", 1, 2)], [A], tests)
    span = Target("a.py", 10, 20)
    assert outranked_by_tests([("a.py", 1, 9), ("tests/test_a.py", 1, 5), ("a.py", 10, 12)], [span], tests), \
        "a chunk of the file outside the span is not the implementation"


def test_spans_are_covered_by_overlapping_lines_of_the_same_path() -> None:
    span = Target("a.py", 10, 20)
    assert covers(("a.py", 15, 30), span) and covers(("a.py", 1, 10), span) and covers(("a.py", 20, 20), span)
    assert not covers(("a.py", 1, 9), span) and not covers(("a.py", 21, 40), span)
    assert not covers(("b.py", 10, 20), span) and not covers(("a.py", None, None), span)
    assert covers(("a.py", None, None), A), "a file target is covered by any hit of the file"
    assert first_ranks([("a.py", 1, 9), ("a.py", 12, 14)], [span, A]) == [2, 1]


def test_only_the_top_ten_count_and_only_indexed_targets_are_ideal() -> None:
    eleventh = [("c.py", 1, 1)] * 10 + [("a.py", 1, 1)]
    assert score_question(question(A), eleventh, INDEXED) == Scores(0.0, 0.0, 0.0)
    gone = Target("gone.py")
    assert score_question(question(A, gone), [("a.py", 1, 1)], INDEXED) == Scores(1.0, 1.0, 1.0)
    assert score_question(question(gone), [("a.py", 1, 1)], INDEXED) is None


def test_means_by_category_skip_unscored_questions() -> None:
    questions = [question(A), question(A, category="symbol"), question(A, category="symbol")]
    groups = by_category(questions, [Scores(1, 1, 1), Scores(0, 0, 0), None])
    assert groups["all"] == Scores(0.5, 0.5, 0.5)
    assert (groups["semantic"], groups["symbol"]) == (Scores(1, 1, 1), Scores(0, 0, 0))
    assert math.isnan(groups["architecture"].ndcg)


def test_parse_question_rejects_malformed_ones() -> None:
    good = {"id": "x", "category": "symbol", "query": "f", "relevant": [{"path": "a.py", "startLine": 2,
                                                                        "endLine": 3}]}
    assert parse_question(good).targets == (Target("a.py", 2, 3),)
    for bad, message in [({**good, "category": "misc"}, "category"),
                         ({**good, "relevant": [{"path": "a.py"}]}, "symbol question"),
                         ({**good, "extra": 1}, "exactly the keys"),
                         ({**good, "relevant": [{"path": "a.py", "startLine": 5, "endLine": 3}]}, "startLine"),
                         ({**good, "relevant": []}, "non-empty list")]:
        with pytest.raises(ValueError, match=message):
            parse_question(bad)


def test_words_per_file_ranks_by_summed_counts_of_distinct_words() -> None:
    files = [Window("a", 1, 1, "retry retry retry"), Window("b", 1, 1, "timeout retry"),
             Window("c", 1, 1, "nothing here")]
    # a: 3 (retry); b: 2 (timeout + retry); a repeated query word counts once; stop words match nothing
    assert words_per_file(files, ["retry timeout", "timeout timeout", "the", "zebra"]) == [[0, 1], [1], [], []]


MANIFEST = json.loads((QUESTIONS / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("project", MANIFEST["projects"], ids=lambda p: p["name"])
def test_question_files_validate(project: dict) -> None:
    questions = load_questions(QUESTIONS / f"{project['name']}.jsonl")
    assert 25 <= len(questions) <= 40
    assert len({q.id for q in questions}) == len(questions), "ids are unique"
    assert len({q.query.lower() for q in questions}) == len(questions), "queries are unique"
    assert {q.category for q in questions} == set(CATEGORIES)
    files = set(project["files"])
    missing = sorted({t.path for q in questions for t in q.targets} - files)
    assert not missing, f"targets not among the project's indexed files: {missing}"
    # the project's own language is indexed (an npm package may be TypeScript)
    assert {"python": ".py", "javascript": ".js", "typescript": ".ts"}[project["language"]] in {
        Path(f).suffix for f in files}


def test_every_question_file_is_in_the_manifest() -> None:
    assert {p.stem for p in QUESTIONS.glob("*.jsonl")} == {p["name"] for p in MANIFEST["projects"]}
    assert len({p["language"] for p in MANIFEST["projects"]}) >= 2
