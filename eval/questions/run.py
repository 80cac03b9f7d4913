"""Driver of the ``questions`` set: hand-written developer questions over whole public projects.

For each project of ``manifest.json``: fetches its pinned sdist (pip download),
npm tarball (npm pack) or Debian package (binary ``-dev`` package or source
tarball, by URL and sha256) into ``.bench/eval/downloads/`` and unpacks it;
indexes the unpacked tree WHOLE (tests, docs, examples: what a user indexes)
with the real CLI in ``RAG_HOME=.bench/home-eval-questions`` (local model, the
repository's ``rag.config.yaml``, no reranker), the only source there, so BM25
statistics come from the project alone; runs every question of
``<project>.jsonl`` through ``rag.search`` (top 10, default options) and ranks
the same questions with the baselines; prints nDCG@10 / MRR@10 / R@10 per
project and category, then the mean over projects (``scoring.py``), how many
behaviour questions rank a test above the implementation, the worst
questions for ours with what ranked first, and per project the files chunked
as plain-text windows.

Baselines:

- ``bm25-1000/200``, ``seed-1000/200``, ``rrf-1000/200``: the peers of
  ``make eval`` (BM25, dense, their naive RRF over 1000/200-character windows
  of every file a scan selects); the dense two embed every window once
  (cached in ``.bench/eval/questions/<project>-windows.npz``), ``--no-dense``
  skips them.
- ``files-bm25``: Okapi BM25 (bm25s, k1 1.2, b 0.75) with each whole file one
  document; a hit is the whole file.
- ``words-per-file``: files ranked by the sum, over the query's distinct
  words (bm25s' tokenizer: lower-cased, English stop words dropped), of how
  many times the file contains the word.

Usage: .venv/bin/python eval/questions/run.py [--projects httpx,qs] [--no-dense] [--update-listing]
"""

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "eval"))  # the shared eval helpers

import bm25s  # noqa: E402
import scoring  # noqa: E402
from common import fetch_debian, fetch_npm, fetch_sdist  # noqa: E402
from peers import (  # noqa: E402
    BM25_MODE,
    FUSION_DEPTH,
    RRF_MODE,
    SEED_MODE,
    Window,
    bm25_rankings,
    dense_window_rankings,
    folder_windows,
    rrf,
)
from run_eval import CachedEmbedder, index_alone, rag  # noqa: E402

from rag import db  # noqa: E402
from rag.config import load_config  # noqa: E402
from rag.evaluation import EvalCase  # noqa: E402
from rag.providers import configured_embedder  # noqa: E402
from rag.providers.rerankers import configured_reranker  # noqa: E402
from rag.search import Searcher, SearchRequest  # noqa: E402
from rag.sources.scan import scan_source  # noqa: E402

HOME = ROOT / ".bench" / "home-eval-questions"
WORK = ROOT / ".bench" / "eval" / "questions"
MANIFEST = HERE / "manifest.json"
OURS, FILES_BM25, WORDS = "ours", "files-bm25", "words-per-file"
SYSTEMS = (OURS, BM25_MODE, SEED_MODE, RRF_MODE, FILES_BM25, WORDS)
WORST = 10  # worst questions listed for ours

Ranked = list[list[scoring.Hit]]  # per question, its ranked hits
Rankings = dict[str, Ranked]  # by system
Results = dict[str, dict[str, scoring.Scores]]  # system -> "all" or a category -> mean scores


def fetch(project: dict[str, Any]) -> Path:
    """The project's unpacked tree; a Debian package's tree is the folder ``root`` inside it."""
    if project["registry"] == "npm":
        return fetch_npm(project["package"], project["version"])
    if project["registry"] == "debian":
        return fetch_debian(project["url"], project["sha256"]) / project["root"]
    return fetch_sdist(project["package"], project["version"])


def window_hits(windows: Sequence[Window], ranking: Sequence[int]) -> list[scoring.Hit]:
    return [(windows[i].path, windows[i].start_line, windows[i].end_line) for i in ranking[:scoring.DEPTH]]


def whole_files(tree: Path) -> list[Window]:
    files = []
    for scanned in scan_source(tree).files:
        text = scanned.abs_path.read_bytes().decode("utf-8", errors="replace")
        files.append(Window(scanned.path, 1, text.count("\n") + 1, text))
    return files


def words_per_file(files: Sequence[Window], queries: Sequence[str]) -> list[list[int]]:
    """Per query, the files containing any of its words, by the summed counts of its distinct words."""
    counts = [Counter(tokens) for tokens in bm25s.tokenize([f.text for f in files], return_ids=False,
                                                           show_progress=False)]
    rankings = []
    for tokens in bm25s.tokenize(list(queries), return_ids=False, show_progress=False):
        words = set(tokens)
        totals = [sum(c[w] for w in words) for c in counts]
        rankings.append(sorted((i for i, t in enumerate(totals) if t > 0), key=lambda i: -totals[i]))
    return rankings


def baselines(tree: Path, queries: list[str], cache: Path, dense: bool) -> Rankings:
    windows = folder_windows(tree)
    keyword = bm25_rankings(windows, queries)
    ranked: Rankings = {BM25_MODE: [window_hits(windows, r) for r in keyword]}
    if dense:
        config = load_config(None).config
        embedder = CachedEmbedder(configured_embedder(config.embeddings), cache)
        cases = [EvalCase(str(n), query, ()) for n, query in enumerate(queries)]  # only the queries are read
        vectors = dense_window_rankings(windows, cases, embedder, depth=FUSION_DEPTH)
        ranked[SEED_MODE] = [window_hits(windows, r) for r in vectors]
        ranked[RRF_MODE] = [window_hits(windows, r) for r in rrf([vectors, keyword])]
    files = whole_files(tree)
    ranked[FILES_BM25] = [window_hits(files, r) for r in bm25_rankings(files, queries)]
    ranked[WORDS] = [window_hits(files, r) for r in words_per_file(files, queries)]
    return ranked


def ours(source: str, queries: list[str]) -> tuple[Ranked, set[str], dict[str, list[int]], int]:
    """Our ranking of each query, the indexed paths, the plain-text-window files (extension -> [files,
    chunks]) and the source's chunk count."""
    config = load_config(None).config
    embedder = configured_embedder(config.embeddings)
    with db.connect(db.resolve_target(config.database)) as conn:
        searcher = Searcher(conn, config.search, embedder, configured_reranker(config.reranker))
        ranked = []
        for query in queries:
            # No source filter: the project is the index's only source, as for a user.
            response = searcher.search(SearchRequest(query, top_k=scoring.DEPTH))
            ranked.append([(h.path, h.coordinates.get("startLine"), h.coordinates.get("endLine"))
                           for h in response.hits])
        # Plain-text windows are chunk_text's languages; reST is sourceType text too, but by section.
        rows = conn.execute(
            "SELECT f.path, count(c.id) AS chunks, count(c.id) FILTER (WHERE "
            "c.metadata->>'sourceType' = 'text' AND c.metadata->>'language' IN ('text', 'csv', 'log')) "
            "AS windows FROM rag.files f "
            "JOIN rag.sources s ON s.id = f.source_id LEFT JOIN rag.chunks c ON c.file_id = f.id "
            "WHERE s.name = %s GROUP BY f.path", (source,)).fetchall()
    windows: dict[str, list[int]] = {}
    for row in rows:
        if row["windows"]:
            extension = Path(row["path"]).suffix or Path(row["path"]).name
            counts = windows.setdefault(extension, [0, 0])
            counts[0] += 1
            counts[1] += row["windows"]
    return ranked, {row["path"] for row in rows}, windows, sum(row["chunks"] for row in rows)


def test_files(paths: set[str]) -> set[str]:
    """The paths that rag.search's priors class as tests or test fixtures (rag.path_class)."""
    config = load_config(None).config
    with db.connect(db.resolve_target(config.database)) as conn:
        rows = conn.execute("SELECT p FROM unnest(%s::text[]) AS p WHERE rag.path_class(p) IN ('test', 'fixture')",
                            (sorted(paths),)).fetchall()
    return {row["p"] for row in rows}


def outranked_counts(questions: Sequence[scoring.Question], rankings: Rankings, tests: set[str]) -> dict[str, int]:
    """Per system, the semantic questions where a test ranks above the implementation (scoring.outranked_by_tests)."""
    return {system: sum(scoring.outranked_by_tests(hits, q.targets, tests)
                        for q, hits in zip(questions, ranked, strict=True) if q.category == "semantic")
            for system, ranked in rankings.items()}


def violations_line(counts: dict[str, int], semantic: int) -> str:
    return (f"tests above the implementation, of {semantic} semantic questions: "
            + ", ".join(f"{system} {n}" for system, n in counts.items()))


def by_category(questions: Sequence[scoring.Question], scores: Sequence[scoring.Scores | None]
                ) -> dict[str, scoring.Scores]:
    """Mean scores of all questions and of each category (questions without an indexed target left out)."""
    groups: dict[str, list[scoring.Scores]] = {"all": [], **{c: [] for c in scoring.CATEGORIES}}
    for question, score in zip(questions, scores, strict=True):
        if score is not None:
            groups["all"].append(score)
            groups[question.category].append(score)
    return {name: scoring.mean(group) for name, group in groups.items()}


def table(title: str, results: Results) -> str:
    """One row per system: nDCG@10 / MRR@10 / R@10 of all questions, then of each category."""
    columns = ["all", *scoring.CATEGORIES]
    lines = [title, f"{'system':<16}" + "".join(f"{c + ' nDCG/MRR/R@10':>28}" for c in columns)]
    for system, groups in results.items():
        cells = [f"{groups[c].ndcg:.3f}/{groups[c].mrr:.3f}/{groups[c].recall:.3f}" for c in columns]
        lines.append(f"{system:<16}" + "".join(f"{cell:>28}" for cell in cells))
    return "\n".join(lines)


def worst(project: str, questions: Sequence[scoring.Question], scores: Sequence[scoring.Scores | None],
          hits: Sequence[Sequence[scoring.Hit]]) -> list[tuple[float, str]]:
    """Our questions by nDCG@10, each with its targets and what ranked first."""
    listed = []
    for question, score, ranked in zip(questions, scores, hits, strict=True):
        if score is None:
            continue
        wanted = ", ".join(_where(t.path, t.start_line, t.end_line) for t in question.targets)
        first = _where(*ranked[0]) if ranked else "nothing"
        listed.append((score.ndcg, f"{project} {question.id} [{question.category}] nDCG {score.ndcg:.2f} "
                                   f"\"{question.query}\" -> want {wanted}; first: {first}"))
    return listed


def _where(path: str, start: int | None, end: int | None) -> str:
    return f"{path}:{start}-{end}" if start is not None else path


def run_project(project: dict[str, Any], dense: bool
                ) -> tuple[str, Results, list[tuple[float, str]], set[str], tuple[dict[str, int], int]]:
    name = project["name"]
    questions = scoring.load_questions(HERE / f"{name}.jsonl")
    queries = [q.query for q in questions]
    tree = fetch(project)
    started = time.monotonic()
    source = f"questions-{name}"
    index_alone(None, source, tree)
    ranked, indexed, text_windows, chunks = ours(source, queries)
    rankings: Rankings = {OURS: ranked, **baselines(tree, queries, WORK / f"{name}-windows.npz", dense)}
    results, per_question = {}, {}
    for system in SYSTEMS:
        if system in rankings:
            per_question[system] = [scoring.score_question(q, h, indexed)
                                    for q, h in zip(questions, rankings[system], strict=True)]
            results[system] = by_category(questions, per_question[system])
    windows = ", ".join(f"{ext} {files} files / {n} chunks"
                        for ext, (files, n) in sorted(text_windows.items()))
    title = (f"{name} {project['version']} ({project['registry']}): {chunks:,} chunks, {len(indexed)} files, "
             f"{len(questions)} questions; {time.monotonic() - started:.0f} s\n"
             f"plain-text windows: {windows or 'none'}")
    violations = outranked_counts(questions, rankings, test_files(indexed))
    semantic = sum(q.category == "semantic" for q in questions)
    text = table(title, results) + "\n" + violations_line(violations, semantic)
    return text, results, worst(name, questions, per_question[OURS], ranked), indexed, (violations, semantic)


def overall(per_project: dict[str, Results]) -> Results:
    """Each system's figures averaged over the projects (each project weighs the same)."""
    systems = [s for s in SYSTEMS if all(s in results for results in per_project.values())]
    return {system: {group: scoring.mean([results[system][group] for results in per_project.values()])
                     for group in ["all", *scoring.CATEGORIES]} for system in systems}


def by_language(per_project: dict[str, Results], languages: dict[str, str]) -> str:
    """Each system's nDCG@10 of all questions, averaged over the projects of each language."""
    systems = [s for s in SYSTEMS if all(s in results for results in per_project.values())]
    columns = sorted({languages[name] for name in per_project})
    lines = ["by language: nDCG@10 of all questions, mean over the language's projects",
             f"{'system':<16}" + "".join(f"{c:>12}" for c in columns)]
    for system in systems:
        cells = [scoring.mean([results[system]["all"] for name, results in per_project.items()
                               if languages[name] == language]).ndcg for language in columns]
        lines.append(f"{system:<16}" + "".join(f"{cell:>12.3f}" for cell in cells))
    return "\n".join(lines)


def main() -> None:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    names = [p["name"] for p in manifest["projects"]]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", default=",".join(names), help="comma-separated: " + ", ".join(names))
    parser.add_argument("--no-dense", action="store_true", help="skip the dense window peers (seed, rrf)")
    parser.add_argument("--update-listing", action="store_true",
                        help="store each project's indexed files in manifest.json")
    parser.add_argument("--config", type=Path,
                        help="a configuration to measure instead of ./rag.config.yaml (e.g. other priors)")
    parser.add_argument("--worst", type=int, default=WORST, metavar="N",
                        help=f"how many of our worst questions to list (default {WORST})")
    args = parser.parse_args()
    chosen = args.projects.split(",")
    if unknown := set(chosen) - set(names):
        parser.error(f"unknown project(s) {', '.join(sorted(unknown))}; choose from {', '.join(names)}")
    os.chdir(ROOT)  # ./rag.config.yaml is the configuration
    for variable in [v for v in os.environ if v.startswith("RAG_")]:
        del os.environ[variable]
    os.environ["RAG_HOME"] = str(HOME)
    if args.config:
        os.environ["RAG_CONFIG"] = str(args.config.resolve())
    WORK.mkdir(parents=True, exist_ok=True)
    rag(None, "init")
    per_project, worst_all, violations, semantic = {}, [], Counter[str](), 0
    for project in (p for p in manifest["projects"] if p["name"] in chosen):
        text, per_project[project["name"]], bad, indexed, (counts, questions) = run_project(project, not args.no_dense)
        worst_all.extend(bad)
        violations.update(counts)
        semantic += questions
        if args.update_listing:
            project["files"] = sorted(indexed)
        print(text + "\n", flush=True)
    print(table(f"overall: mean over {len(per_project)} projects", overall(per_project)) + "\n")
    print(by_language(per_project, {p["name"]: p["language"] for p in manifest["projects"]}))
    print(violations_line(dict(violations), semantic) + "\n")
    print(f"worst {args.worst} questions for {OURS} (lowest nDCG@10):")
    print("\n".join(line for _, line in sorted(worst_all, key=lambda item: item[0])[:args.worst]))
    if args.update_listing:
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
