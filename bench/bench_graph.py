"""Code graph benchmark (`make bench-graph`): rag.callers/rag.callees against a
reference resolver per language, printed figures.

Corpora, fetched into .bench/ at bench time and indexed keyword-only into
their own RAG_HOME: the requests 2.32.3 sdist (its src/ folder) with jedi as
the reference, and the rxjs 7.8.1 npm package (its src/ folder, TypeScript)
with the TypeScript 5.6.3 compiler's language service as the reference
(bench/ts_reference.js on node: `findReferences` for callers, the call
hierarchy's outgoing calls for callees). A fixed random sample (seed 21) of up
to 200 functions and methods per corpus (TypeScript constructors left out: the
graph files `new X()` under the class); for each, the callers and callees the
graph lists (depth 1) are compared with the reference's, as sets of (path,
enclosing definition). The same is printed with the dynamic-dispatch guesses
traversals leave out by default (x.f() with x of unknown type, linked to every
method f), and for a name-only baseline: every call of that name (callers),
every definition of each name called in the function (callees).
Micro-averaged precision and recall.
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / ".bench"
PACKAGE, VERSION = "requests", "2.32.3"
TS_PACKAGE, TS_VERSION = "rxjs", "7.8.1"
TYPESCRIPT = "5.6.3"
SAMPLE, SEED = 200, 21
os.environ["RAG_HOME"] = str(BENCH / "home-graph")

import jedi  # noqa: E402
import psycopg  # noqa: E402

from rag import db  # noqa: E402
from rag.config import DatabaseConfig  # noqa: E402
from rag.indexer import ChunkSettings, SourceSpec, index_source  # noqa: E402
from rag.providers import NoneEmbedder  # noqa: E402

Site = tuple[str, str]  # (path, fqn of the enclosing definition or "<module>")
Conn = psycopg.Connection[dict[str, Any]]


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


def npm_package(name: str, version: str) -> Path:
    """The unpacked `npm pack` archive of a pinned package (its package/ folder)."""
    tree = BENCH / "npm" / f"{name}-{version}"
    if not (tree / "package").is_dir():
        downloads = BENCH / "npm"
        downloads.mkdir(parents=True, exist_ok=True)
        archive = downloads / f"{name}-{version}.tgz"
        if not archive.exists():
            subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=downloads, check=True,
                           capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
    return tree / "package"


class Definitions:
    """The indexed symbols of a corpus: which definition encloses a line, which are named so."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.by_path: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            self.by_path.setdefault(row["path"], []).append(row)

    def enclosing(self, path: str, line: int) -> str:
        """The innermost definition around a line, as the graph files a reference's caller."""
        inside = [r for r in self.by_path.get(path, []) if r["start_line"] <= line <= r["end_line"]]
        if not inside:
            return "<module>"
        return min(inside, key=lambda r: r["end_line"] - r["start_line"])["fqn"]

    def defined_at(self, path: str, line: int, name: str) -> str | None:
        """The definition named so around a line, else the next one below it: the graph
        files TypeScript's overload signatures under the implementation that follows."""
        named = [r for r in self.by_path.get(path, []) if r["fqn"].rsplit(".", 1)[-1] == name]
        here = [r for r in named if r["start_line"] <= line <= r["end_line"]]
        if here:
            return str(min(here, key=lambda r: r["end_line"] - r["start_line"])["fqn"])
        below = [r for r in named if r["start_line"] > line]
        return str(min(below, key=lambda r: r["start_line"])["fqn"]) if below else None

    def named(self, name: str) -> set[Site]:
        return {(r["path"], r["fqn"]) for r in self.rows if r["fqn"].rsplit(".", 1)[-1] == name}


class Comparison:
    """Agreed, listed and reference counts per way of finding callers and callees."""

    KEYS = ("callers graph", "callers graph, unambiguous", "callers graph, with dynamic", "callers name-only",
            "callees graph", "callees graph, unambiguous", "callees name-only")

    def __init__(self, conn: Conn, source: str) -> None:
        self.conn, self.source = conn, source
        self.tallies = {key: [0, 0, 0] for key in self.KEYS}
        rows = conn.execute(
            "SELECT f.path, s.fqn, s.kind, s.start_line, s.end_line, s.signature FROM rag.symbols s"
            " JOIN rag.files f ON f.id = s.file_id JOIN rag.sources src ON src.id = s.source_id"
            " WHERE src.name = %s ORDER BY f.path, s.start_line, s.fqn", (source,)).fetchall()
        self.defs = Definitions(rows)
        self.calls = conn.execute(
            "SELECT r.path, r.name, (SELECT fqn FROM rag.symbols WHERE id = r.from_id) AS caller"
            " FROM rag.ref_status r JOIN rag.sources src ON src.id = r.source_id"
            " WHERE r.kind = 'call' AND src.name = %s", (source,)).fetchall()

    def sample(self, keep: Any = lambda row: True) -> list[dict[str, Any]]:
        """The fixed random sample: functions and methods whose fqn is unique in their file."""
        unique = [r for r in self.defs.rows if r["kind"] in ("FUNCTION", "METHOD") and keep(r)
                  and sum(1 for o in self.defs.by_path[r["path"]] if o["fqn"] == r["fqn"]) == 1]
        return random.Random(SEED).sample(unique, min(SAMPLE, len(unique)))

    def _sites(self, sql: str, symbol: str, sure_only: bool = False) -> set[Site]:
        rows = self.conn.execute(sql, (symbol, [self.source])).fetchall()
        return {(r["path"], r["fqn"] or "<module>") for r in rows if not (sure_only and r["ambiguous"])}

    def add(self, row: dict[str, Any], truth_callers: set[Site], truth_callees: set[Site],
            called_names: Iterable[str]) -> None:
        symbol, name = f"{row['path']}:{row['fqn']}", row["fqn"].rsplit(".", 1)[-1]
        callers = "SELECT path, fqn, ambiguous FROM rag.callers(%s, 1, %s)"
        callees = "SELECT path, fqn, ambiguous FROM rag.callees(%s, 1, %s)"
        dynamic = "SELECT path, fqn, ambiguous FROM rag.traverse(%s, ARRAY['calls'], 'in', 1, %s, dynamic => true)"
        name_callees: set[Site] = set()
        for called in set(called_names):
            name_callees |= self.defs.named(called)
        found = {
            "callers graph": self._sites(callers, symbol),
            "callers graph, unambiguous": self._sites(callers, symbol, sure_only=True),
            "callers graph, with dynamic": self._sites(dynamic, symbol),
            "callers name-only": {(c["path"], c["caller"] or "<module>") for c in self.calls if c["name"] == name},
            "callees graph": self._sites(callees, symbol),
            "callees graph, unambiguous": self._sites(callees, symbol, sure_only=True),
            "callees name-only": name_callees,
        }
        if os.environ.get("BENCH_DEBUG"):
            for kind, truth in (("callers", truth_callers), ("callees", truth_callees)):
                graph = found[f"{kind} graph"]
                if graph != truth:
                    print(kind.upper(), symbol, "only graph:", sorted(graph - truth),
                          "only reference:", sorted(truth - graph))
        for key, listed in found.items():
            truth = truth_callers if key.startswith("callers") else truth_callees
            tally = self.tallies[key]
            tally[0] += len(listed & truth)
            tally[1] += len(listed)
            tally[2] += len(truth)

    def report(self, title: str, reference: str) -> None:
        status = self.conn.execute("SELECT * FROM rag.graph_status(%s)", ([self.source],)).fetchone()
        assert status is not None
        print(f"corpus: {title}: {len(self.defs.rows)} definitions, {status['refs']} references "
              f"({status['resolved']} resolved, {status['ambiguous']} ambiguous, {status['unresolved']} "
              f"unresolved); sample seed {SEED}; reference: {reference}")
        for key, (hits, listed, truth) in self.tallies.items():
            precision = hits / listed if listed else 0.0
            recall = hits / truth if truth else 0.0
            print(f"  {key:<27} precision {precision:.3f} recall {recall:.3f} "
                  f"({hits} agreed, {listed} listed, {truth} by the reference)")


def index(conn: Conn, name: str, root: Path) -> None:
    index_source(conn, SourceSpec(name, "local", str(root)), root, NoneEmbedder(), ChunkSettings(), force=True)


def in_corpus(src: Path, module_path: Path | None) -> str | None:
    """The corpus-relative path, None for the standard library or another package."""
    try:
        return str(Path(module_path).relative_to(src)) if module_path is not None else None
    except ValueError:
        return None


def is_call(lines: list[str], line: int, column: int, name: str) -> bool:
    rest = lines[line - 1][column + len(name):]
    return rest.lstrip().startswith("(")


def python_part(conn: Conn) -> None:
    src = corpus()
    index(conn, PACKAGE, src)
    comparison = Comparison(conn, PACKAGE)
    defs = comparison.defs
    sample = comparison.sample()
    project = jedi.Project(src)
    texts = {path: (src / path).read_text().split("\n") for path in defs.by_path}
    for row in sample:
        path, name = row["path"], row["fqn"].rsplit(".", 1)[-1]
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
        truth_callees: set[Site] = set()
        called_names: set[str] = set()
        for used in script.get_names(all_scopes=True, references=True):
            if not (row["start_line"] <= used.line <= row["end_line"]) or used.is_definition():
                continue
            if not is_call(lines, used.line, used.column, used.name):
                continue
            called_names.add(used.name)
            for found in used.goto(follow_imports=True):
                found_path = in_corpus(src, found.module_path)
                if found_path is None or found.line is None:
                    continue
                defined = defs.defined_at(found_path, found.line, found.name)
                if defined is not None:
                    truth_callees.add((found_path, defined))
        comparison.add(row, truth_callers, truth_callees, called_names)
    comparison.report(f"{PACKAGE} {VERSION} ({len(sample)} sampled)", f"jedi {jedi.__version__}")


def name_position(lines: list[str], row: dict[str, Any]) -> tuple[int, int] | None:
    """Line and column of a definition's name: on its signature line, the name as a word."""
    name = row["fqn"].rsplit(".", 1)[-1]
    for line in range(row["start_line"], row["end_line"] + 1):
        if lines[line - 1].strip() == row["signature"]:
            found = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", lines[line - 1])
            if found:
                return line, found.start()
    return None


def typescript_part(conn: Conn) -> None:
    src = npm_package(TS_PACKAGE, TS_VERSION) / "src"
    typescript = npm_package("typescript", TYPESCRIPT) / "lib" / "typescript.js"
    index(conn, TS_PACKAGE, src)
    comparison = Comparison(conn, TS_PACKAGE)
    defs = comparison.defs
    texts = {path: (src / path).read_text().split("\n") for path in defs.by_path}
    sample = [(row, position) for row in comparison.sample(lambda r: not r["fqn"].endswith(".constructor"))
              if (position := name_position(texts[row["path"]], row)) is not None]
    answer = json.loads(subprocess.run(
        ["node", str(Path(__file__).with_name("ts_reference.js")), str(typescript), str(src)],
        input=json.dumps([{"path": row["path"], "line": line, "column": column} for row, (line, column) in sample]),
        capture_output=True, text=True, check=True).stdout)
    for (row, _), found in zip(sample, answer["answers"], strict=True):
        truth_callers = {(path, defs.enclosing(path, line)) for path, line in found["callers"]}
        truth_callees = {(path, fqn) for path, line, name in found["callees"]
                         if (fqn := defs.defined_at(path, line, name)) is not None}
        comparison.add(row, truth_callers, truth_callees, found["calledNames"])
    comparison.report(f"{TS_PACKAGE} {TS_VERSION} ({len(sample)} sampled)",
                      f"TypeScript {answer['version']} language service")


def main() -> None:
    target = db.resolve_target(DatabaseConfig())
    db.install_schema(target)
    with db.connect(target) as conn:
        python_part(conn)
        typescript_part(conn)
    subprocess.run([str(Path(sys.executable).parent / "rag"), "db", "stop"], capture_output=True)


if __name__ == "__main__":
    main()
