"""Code graph benchmark (`make bench-graph`): rag.callers/rag.callees against jedi, printed figures.

Corpus: the requests 2.32.3 sdist (its src/ folder), fetched with pip into
.bench/ at bench time and indexed keyword-only into its own RAG_HOME. A fixed
random sample (seed 21) of up to 200 functions and methods; for each, the
callers and callees the graph lists (depth 1) are compared with jedi's
(`Script.get_references` on the definition for callers, `goto` on every call
inside it for callees), as sets of (path, enclosing definition). The same is
printed with the dynamic-dispatch guesses traversals leave out by default
(x.f() with x of unknown type, linked to every method f), and for a name-only
baseline: every call of that name (callers), every definition of each called
name (callees). Micro-averaged precision and recall.
"""

import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / ".bench"
PACKAGE, VERSION = "requests", "2.32.3"
SAMPLE, SEED = 200, 21
os.environ["RAG_HOME"] = str(BENCH / "home-graph")

import jedi  # noqa: E402

from rag import db  # noqa: E402
from rag.config import DatabaseConfig  # noqa: E402
from rag.indexer import ChunkSettings, SourceSpec, index_source  # noqa: E402
from rag.providers import NoneEmbedder  # noqa: E402

Site = tuple[str, str]  # (path, fqn of the enclosing definition or "<module>")


def corpus() -> Path:
    tree = BENCH / f"{PACKAGE}-{VERSION}"
    if not tree.is_dir():
        BENCH.mkdir(exist_ok=True)
        archive = BENCH / f"{PACKAGE}-{VERSION}.tar.gz"
        if not archive.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--no-binary", ":all:", f"{PACKAGE}=={VERSION}", "-d", str(BENCH)], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(BENCH, filter="data")
    return tree / "src"


class Definitions:
    """The indexed symbols of the corpus: which definition encloses a line, which are named so."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.by_path: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            self.by_path.setdefault(row["path"], []).append(row)

    def enclosing(self, path: str, line: int, callable_only: bool = True) -> str:
        inside = [r for r in self.by_path.get(path, []) if r["start_line"] <= line <= r["end_line"]
                  and (not callable_only or r["kind"] in ("FUNCTION", "METHOD"))]
        if not inside:
            return "<module>"
        return min(inside, key=lambda r: r["end_line"] - r["start_line"])["fqn"]

    def defined_at(self, path: str, line: int, name: str) -> str | None:
        here = [r for r in self.by_path.get(path, []) if r["fqn"].rsplit(".", 1)[-1] == name
                and r["start_line"] <= line <= r["end_line"]]
        return min(here, key=lambda r: r["end_line"] - r["start_line"])["fqn"] if here else None

    def named(self, name: str) -> set[Site]:
        return {(r["path"], r["fqn"]) for r in self.rows if r["fqn"].rsplit(".", 1)[-1] == name}


def in_corpus(src: Path, module_path: Path | None) -> str | None:
    """The corpus-relative path, None for the standard library or another package."""
    try:
        return str(Path(module_path).relative_to(src)) if module_path is not None else None
    except ValueError:
        return None


def is_call(lines: list[str], line: int, column: int, name: str) -> bool:
    rest = lines[line - 1][column + len(name):]
    return rest.lstrip().startswith("(")


def main() -> None:
    src = corpus()
    target = db.resolve_target(DatabaseConfig())
    db.install_schema(target)
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("requests", "local", str(src)), src, NoneEmbedder(),
                     ChunkSettings(), force=True)
        symbols = conn.execute(
            "SELECT f.path, s.fqn, s.kind, s.start_line, s.end_line FROM rag.symbols s"
            " JOIN rag.files f ON f.id = s.file_id ORDER BY f.path, s.start_line, s.fqn").fetchall()
        calls = conn.execute(
            "SELECT path, name, from_id, (SELECT fqn FROM rag.symbols WHERE id = from_id) AS caller"
            " FROM rag.ref_status WHERE kind = 'call'").fetchall()
        defs = Definitions(symbols)
        unique = [r for r in symbols if r["kind"] in ("FUNCTION", "METHOD")
                  and sum(1 for o in defs.by_path[r["path"]] if o["fqn"] == r["fqn"]) == 1]
        sample = random.Random(SEED).sample(unique, min(SAMPLE, len(unique)))
        project = jedi.Project(src)
        texts = {path: (src / path).read_text().split("\n") for path in defs.by_path}
        tallies = {key: [0, 0, 0] for key in (
            "callers graph", "callers graph, unambiguous", "callers graph, with dynamic", "callers name-only",
            "callees graph", "callees graph, unambiguous", "callees name-only")}
        for row in sample:
            path, fqn, name = row["path"], row["fqn"], row["fqn"].rsplit(".", 1)[-1]
            lines = texts[path]
            name_line = next(n for n in range(row["start_line"], row["end_line"] + 1)
                             if f"def {name}" in lines[n - 1])
            column = lines[name_line - 1].index(f"def {name}") + 4
            script = jedi.Script(path=str(src / path), project=project)
            truth_callers: set[Site] = set()
            for ref in script.get_references(name_line, column, include_builtins=False):
                ref_path = in_corpus(src, ref.module_path)
                if ref_path is None or ref.line is None or ref.column is None or ref.is_definition():
                    continue
                if ref_path in texts and is_call(texts[ref_path], ref.line, ref.column, name):
                    truth_callers.add((ref_path, defs.enclosing(ref_path, ref.line)))
            listed = conn.execute("SELECT path, fqn, ambiguous FROM rag.callers(%s, 1)",
                                  (f"{path}:{fqn}",)).fetchall()
            graph_callers = {(r["path"], r["fqn"] or "<module>") for r in listed}
            sure_callers = {(r["path"], r["fqn"] or "<module>") for r in listed if not r["ambiguous"]}
            with_dynamic = {(r["path"], r["fqn"] or "<module>") for r in conn.execute(
                "SELECT path, fqn FROM rag.traverse(%s, ARRAY['calls'], 'in', 1, dynamic => true)",
                (f"{path}:{fqn}",)).fetchall()}
            name_callers = {(c["path"], c["caller"] or "<module>") for c in calls if c["name"] == name}
            if os.environ.get("BENCH_DEBUG") and graph_callers != truth_callers:
                print("CALLERS", fqn, "only graph (ambiguous?):",
                      sorted((*site, site not in sure_callers) for site in graph_callers - truth_callers),
                      "only jedi:", sorted(truth_callers - graph_callers))
            truth_callees: set[Site] = set()
            name_callees: set[Site] = set()
            for used in script.get_names(all_scopes=True, references=True):
                if not (row["start_line"] <= used.line <= row["end_line"]) or used.is_definition():
                    continue
                if not is_call(lines, used.line, used.column, used.name):
                    continue
                name_callees |= defs.named(used.name)
                for found in used.goto(follow_imports=True):
                    found_path = in_corpus(src, found.module_path)
                    if found_path is None or found.line is None:
                        continue
                    defined = defs.defined_at(found_path, found.line, found.name)
                    if defined is not None:
                        truth_callees.add((found_path, defined))
            listed = conn.execute("SELECT path, fqn, ambiguous FROM rag.callees(%s, 1)",
                                  (f"{path}:{fqn}",)).fetchall()
            graph_callees = {(r["path"], r["fqn"]) for r in listed}
            sure_callees = {(r["path"], r["fqn"]) for r in listed if not r["ambiguous"]}
            for key, found_set, truth in (
                ("callers graph", graph_callers, truth_callers),
                ("callers graph, unambiguous", sure_callers, truth_callers),
                ("callers graph, with dynamic", with_dynamic, truth_callers),
                ("callers name-only", name_callers, truth_callers),
                ("callees graph", graph_callees, truth_callees),
                ("callees graph, unambiguous", sure_callees, truth_callees),
                ("callees name-only", name_callees, truth_callees),
            ):
                tallies[key][0] += len(found_set & truth)
                tallies[key][1] += len(found_set)
                tallies[key][2] += len(truth)
        status = conn.execute("SELECT * FROM rag.graph_status()").fetchone()
    print(f"corpus: {PACKAGE} {VERSION}: {len(symbols)} definitions, {status['refs']} references "
          f"({status['resolved']} resolved, {status['ambiguous']} ambiguous, {status['unresolved']} "
          f"unresolved); sample of {len(sample)} functions/methods, seed {SEED}; reference: jedi "
          f"{jedi.__version__}")
    for key, (hits, found_total, truth_total) in tallies.items():
        precision = hits / found_total if found_total else 0.0
        recall = hits / truth_total if truth_total else 0.0
        print(f"{key:<27} precision {precision:.3f} recall {recall:.3f} "
              f"({hits} agreed, {found_total} listed, {truth_total} by jedi)")
    subprocess.run([str(Path(sys.executable).parent / "rag"), "db", "stop"], capture_output=True)


if __name__ == "__main__":
    main()
