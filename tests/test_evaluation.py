"""rag.evaluation: the file format, the relevance rule, metric arithmetic against hand-computed
values, the seed-design windows (eval/peers.py), the table, and one end-to-end run on a real database."""

import hashlib
import json
import math
import re
from pathlib import Path

import pytest
from peers import char_windows, folder_windows, seed_baseline

from rag import db
from rag.config import ChunkSettings, SearchConfig, SourceSpec
from rag.errors import RagError
from rag.evaluation import (
    Answer,
    EvalCase,
    Evaluation,
    Metrics,
    evaluate,
    format_table,
    gains,
    is_relevant,
    load_cases,
    score,
)
from rag.indexer import index_source
from rag.providers import NoneEmbedder
from rag.providers.rerankers import NoReranker
from rag.search import Searcher

SPAN = Answer("a.py", start_line=10, end_line=20)
SECTION = Answer("guide.md", header_path="# Guide > ## Auth")


# --- relevance ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "coordinates", "answer", "expected"),
    [
        ("a.py", {"startLine": 1, "endLine": 10}, SPAN, True),  # touches the first line
        ("a.py", {"startLine": 20, "endLine": 30}, SPAN, True),  # touches the last line
        ("a.py", {"startLine": 12, "endLine": 14}, SPAN, True),  # inside
        ("a.py", {"startLine": 1, "endLine": 40}, SPAN, True),  # around
        ("a.py", {"startLine": 1, "endLine": 9}, SPAN, False),
        ("a.py", {"startLine": 21, "endLine": 30}, SPAN, False),
        ("b.py", {"startLine": 12, "endLine": 14}, SPAN, False),
        ("a.py", {}, SPAN, False),
        ("guide.md", {"headerPath": "# Guide > ## Auth"}, SECTION, True),
        ("guide.md", {"headerPath": "# Guide > ## Auth > ### JWT"}, SECTION, True),
        ("guide.md", {"headerPath": "# Guide > ## Authors"}, SECTION, False),
        ("guide.md", {"headerPath": "# Guide"}, SECTION, False),
        ("guide.md", {"headerPath": "# Guide", "headerPaths": ["# Guide > ## Intro", "# Guide > ## Auth"]}, SECTION,
         True),
        ("guide.md", {"headerPath": "", "headerPaths": ["# Guide > ## Intro", "# Other"]}, SECTION, False),
        ("guide.md", {"startLine": 1, "endLine": 99}, SECTION, False),
        ("guide.md", {"headerPath": ""}, Answer("guide.md", header_path=""), True),
        ("guide.md", {"headerPath": "# Guide"}, Answer("guide.md", header_path=""), False),
        ("guide.md", {"startLine": 3, "endLine": 4}, Answer("guide.md"), True),
        ("other.md", {}, Answer("guide.md"), False),
    ],
)
def test_relevance_rule(path: str, coordinates: dict[str, object], answer: Answer, expected: bool) -> None:
    assert is_relevant(path, coordinates, answer) is expected


def hit(line: int, path: str = "a.py") -> tuple[str, dict[str, object]]:
    return path, {"startLine": line, "endLine": line}


def test_gains_credit_each_answer_once_and_stop_at_ten() -> None:
    answers = [Answer("a.py", start_line=1, end_line=1), Answer("a.py", start_line=5, end_line=5)]
    ranked = [hit(9), hit(1), hit(1), hit(5), hit(5)]
    assert gains(ranked, answers) == [False, True, False, True, False]
    assert gains([hit(9)] * 10 + [hit(1)], answers) == [False] * 10  # rank 11 is not seen


# --- metric arithmetic ----------------------------------------------------------


def test_metrics_against_hand_computed_values() -> None:
    first_at_two = ([False, True, False], 1, [600, 400, 10])  # one answer, found at rank 2, 1,000 tokens read
    nothing = ([False] * 10, 1, [5] * 10)
    both_found = ([True, False, False, True], 2, [1001, 1, 1, 1])  # answers at ranks 1 and 4; the first is long
    metrics = score([first_at_two, nothing, both_found])
    assert metrics.queries == 3
    assert metrics.recall == {1: pytest.approx(1 / 3), 5: pytest.approx(2 / 3), 10: pytest.approx(2 / 3)}
    assert metrics.mrr == pytest.approx((1 / 2 + 0 + 1) / 3)
    ndcg_first = (1 / math.log2(3)) / 1
    ndcg_both = (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_first == pytest.approx(0.63093, abs=1e-5)
    assert ndcg_both == pytest.approx(0.87722, abs=1e-5)
    assert metrics.ndcg == pytest.approx((ndcg_first + 0 + ndcg_both) / 3)
    assert metrics.within_budget == pytest.approx(1 / 3), "found in 1,000 tokens: only the first case"


def test_ideal_dcg_is_capped_at_ten_answers() -> None:
    perfect = score([([True] * 10, 25, [1] * 10)])
    assert perfect.ndcg == pytest.approx(1.0)
    assert perfect.recall == {1: 1.0, 5: 1.0, 10: 1.0} and perfect.mrr == 1.0
    late = score([([False] * 9 + [True], 1, [1] * 10)])
    assert late.recall == {1: 0.0, 5: 0.0, 10: 1.0}
    assert late.mrr == pytest.approx(0.1) and late.ndcg == pytest.approx(1 / math.log2(11))


def test_no_queries_is_an_error() -> None:
    with pytest.raises(RagError, match="no queries"):
        score([])


# --- the file -------------------------------------------------------------------


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_load_cases_reads_every_answer_shape(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# a comment",
        json.dumps({"id": 1, "query": "find a user", "relevant": [{"path": "a.py", "startLine": 3, "endLine": 9}]}),
        "",
        json.dumps({"id": "d", "query": "auth", "source": "docs",
                    "relevant": [{"path": "g.md", "headerPath": "# G"}, {"path": "h.md"}]}),
    )
    assert load_cases(path) == [
        EvalCase("1", "find a user", (Answer("a.py", 3, 9),)),
        EvalCase("d", "auth", (Answer("g.md", header_path="# G"), Answer("h.md")), "docs"),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "cases.jsonl:2: not JSON"),
        ("[1, 2]", 'cases.jsonl:2: expected a JSON object with "id"'),
        ('{"id": "x", "query": "q"}', 'cases.jsonl:2: case x: "relevant" must be a non-empty list'),
        ('{"id": "x", "query": " ", "relevant": [{"path": "a"}]}', '"query" must be a non-empty string'),
        ('{"query": "q", "relevant": [{"path": "a"}]}', '"id" must be a non-empty string or a number'),
        ('{"id": "x", "query": "q", "relevant": [{"path": "a"}], "top": 3}', "unknown key 'top'"),
        ('{"id": "x", "query": "q", "relevant": [{"file": "a"}]}', "each answer must be"),
        ('{"id": "x", "query": "q", "relevant": [{"path": "a", "startLine": 5, "endLine": 2}]}',
         "start <= end"),
        ('{"id": "x", "query": "q", "relevant": [{"path": "a", "startLine": 5}]}', "not keys"),
        ('{"id": "x", "query": "q", "relevant": [{"path": "a", "headerPath": 1}]}', "headerPath must be"),
        ('{"id": "x", "query": "q", "relevant": [{"path": "a"}], "source": ""}', '"source" must be'),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, '{"id": 1, "query": "ok", "relevant": [{"path": "a"}]}', line)
    with pytest.raises(RagError, match=re.escape(message)):
        load_cases(path)


def test_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(RagError, match="cannot read the evaluation file"):
        load_cases(tmp_path / "absent.jsonl")
    with pytest.raises(RagError, match="no cases"):
        load_cases(write(tmp_path, "# only a comment"))


# --- the seed design ------------------------------------------------------------


def test_char_windows_overlap_and_line_spans() -> None:
    windows = char_windows("ab\ncd\nef\n", "f.txt", size=4, overlap=1)
    assert [(w.text, w.start_line, w.end_line) for w in windows] == [
        ("ab\nc", 1, 2), ("cd\ne", 2, 3), ("ef\n", 3, 3),
    ]
    assert char_windows("x" * 1800, "f", 1000, 200)[-1].text == "x" * 1000  # no tail window needed
    assert [len(w.text) for w in char_windows("x" * 1801, "f", 1000, 200)] == [1000, 1000, 201]
    assert char_windows("   \n\n", "f") == []
    with pytest.raises(RagError):
        char_windows("text", "f", size=10, overlap=10)


class WordEmbedder:
    """Hashed bag of words: texts that share words are near, deterministic, no model."""

    model_id = "words@64"
    dimensions = 64

    def embed_documents(self, texts: list[str], progress: object = None) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in re.findall(r"[a-z]+", text.lower()):
            vector[hashlib.md5(word.encode()).digest()[0] % self.dimensions] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]


def make_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "users.py").write_text(
        "def find_user(user_id):\n    return USERS.get(user_id)\n\n\n"
        "def delete_user(user_id):\n    USERS.pop(user_id)\n"
    )
    (root / "pkg" / "tokens.py").write_text("def parse_token(header):\n    return header.split()[1]\n")
    (root / "guide.md").write_text("# Guide\n\n## Install\n\nRun pip install.\n\n## Tokens\n\nSend a bearer token.\n")
    return root


CASES = [
    EvalCase("user", "find user by id", (Answer("pkg/users.py", 1, 2),)),
    EvalCase("token", "parse token header", (Answer("pkg/tokens.py", 1, 2),)),
    EvalCase("bearer", "bearer token", (Answer("guide.md", header_path="# Guide > ## Tokens"),)),
]


def test_folder_windows_cover_the_indexable_files(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "skip.js").write_text("ignored()\n")
    windows = folder_windows(root, size=60, overlap=10)
    assert {w.path for w in windows} == {"pkg/users.py", "pkg/tokens.py", "guide.md"}


def test_seed_baseline_ranks_windows_by_cosine(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "long.md").write_text("# Long\n\n" + "filler words here.\n" * 200 + "\n## Bearer\n\nbearer token\n")
    cases = [*CASES, EvalCase("long", "bearer token", (Answer("long.md", header_path="# Long > ## Bearer"),))]
    metrics = seed_baseline(root, cases, WordEmbedder())
    assert metrics.queries == 4
    assert metrics.recall[10] == 1.0, "headerPath answers are judged by their section's lines"
    assert metrics.recall[1] < 1.0, "1000-character windows put guide.md in one window for both token cases"


# --- the table ------------------------------------------------------------------


def test_format_table_puts_modes_side_by_side() -> None:
    bm25 = Metrics(300, {1: 0.25, 5: 0.5, 10: 0.625}, 0.3456, 0.41, 0.5)
    hybrid = Metrics(300, {1: 0.5, 5: 0.75, 10: 1.0}, 0.6, 0.7, 0.9)
    assert format_table({"bm25": bm25, "hybrid": hybrid}, ["hybrid+rerank skipped"], title="set") == (
        "set\n"
        "300 queries   bm25  hybrid\n"
        "Recall@1     0.250   0.500\n"
        "Recall@5     0.500   0.750\n"
        "Recall@10    0.625   1.000\n"
        "MRR@10       0.346   0.600\n"
        "nDCG@10      0.410   0.700\n"
        "R@1000tok    0.500   0.900\n"
        "note: hybrid+rerank skipped"
    )
    result = Evaluation({"bm25": bm25}, ["a note"])
    assert result.as_dict() == {"metrics": {"bm25": {"queries": 300, "recall@1": 0.25, "recall@5": 0.5,
                                                     "recall@10": 0.625, "mrr@10": 0.3456, "ndcg@10": 0.41,
                                                     "recall@1000tokens": 0.5}},
                                "notes": ["a note"], "queries": {}}


# --- end to end on a real database ---------------------------------------------


def index_project(target: db.DatabaseTarget, root: Path, embedder: object) -> None:
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("demo", "local", str(root)), root, embedder,  # type: ignore[arg-type]
                     ChunkSettings(max_tokens=40, overlap=0))


@pytest.mark.usefixtures("sections_unmerged")
def test_evaluate_keyword_only_index(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    index_project(rag_db, root, NoneEmbedder())
    cases_file = write(tmp_path, *(json.dumps({"id": c.id, "query": c.query, "relevant": [
        {"path": a.path, **({"headerPath": a.header_path} if a.header_path is not None
                            else {"startLine": a.start_line, "endLine": a.end_line})}
        for a in c.relevant]}) for c in CASES))
    with db.connect(rag_db) as conn:
        # (prose at full weight: the guide's section must win "bearer token" over parse_token)
        searcher = Searcher(conn, SearchConfig(priors={"docs": 1}), NoneEmbedder(), NoReranker())
        done: list[str] = []
        result = evaluate(searcher, load_cases(cases_file), source="demo", progress=done.append)
    assert list(result.metrics) == ["bm25"]
    assert done == ["bm25"] * 3
    assert result.metrics["bm25"].recall[1] == 1.0
    assert result.notes == [
        "hybrid+rerank skipped: reranker.provider is none",
        "vector, hybrid skipped: the index has no vectors for embedding model 'none'",
    ]
    assert "MRR@10     1.000" in format_table(result.metrics, result.notes)


@pytest.mark.usefixtures("sections_unmerged")
def test_evaluate_every_arm_with_vectors(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    embedder = WordEmbedder()
    index_project(rag_db, root, embedder)
    with db.connect(rag_db) as conn:
        searcher = Searcher(conn, SearchConfig(), embedder, NoReranker())  # type: ignore[arg-type]
        result = evaluate(searcher, CASES, ["hybrid", "vector", "bm25", "hybrid"])
        assert list(result.metrics) == ["hybrid", "vector", "bm25"]
        assert all(m.queries == 3 and m.recall[10] == 1.0 for m in result.metrics.values())
        with pytest.raises(RagError, match="case user: search: unknown source 'ghost'"):
            evaluate(searcher, CASES, ["bm25"], source="ghost")
        with pytest.raises(RagError, match="unknown evaluation mode 'dense'"):
            evaluate(searcher, CASES, ["dense"])
