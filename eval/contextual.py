"""Contextual chunk text measured: MRR@10 of each set without and with ``indexing.context: llm``.

For each ``SET[:PREFIX[+PREFIX...]]`` (a set of ``make eval``, or the part of its copy under
the prefixes with the cases whose answers lie there, when the whole set would take the LLM
too long) the
copy is indexed in ``RAG_HOME=.bench/home-contextual`` with the repository's configuration
plus ``indexing.context: none``, evaluated (bm25, vector, hybrid), indexed again with
``indexing.context: llm`` through the OpenAI-compatible server at ``--base-url`` (only the
contextual texts change: the run asks for them and re-embeds the chunks whose text
changed), evaluated again. Prints one table per set and a summary: MRR@10 before/after
per mode, LLM requests, seconds of the contextualizing run and seconds per 1,000 chunks.

Usage: .venv/bin/python eval/contextual.py --base-url http://127.0.0.1:8091/v1 --model gemma-3-270m \\
           --sets md-docs:attrs/,rst-docs:jinja2/,rxjs-code:src/internal/observable/
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from common import ROOT, set_dir

from rag import db
from rag.config import load_config
from rag.evaluation import EvalCase, Metrics, evaluate, format_table, load_cases
from rag.providers import configured_embedder
from rag.providers.rerankers import configured_reranker
from rag.search import Searcher

HOME = ROOT / ".bench" / "home-contextual"
WORK = ROOT / ".bench" / "contextual"
RAG = str(Path(sys.executable).parent / "rag")
MODES = ("bm25", "vector", "hybrid")


def rag(config: Path, *args: str) -> str:
    return subprocess.run([RAG, "--config", str(config), *args], check=True, stdout=subprocess.PIPE,
                          text=True).stdout


def write_configs(base_url: str, model: str, concurrency: int, timeout: float,
                  temperature: float) -> tuple[Path, Path]:
    """The repository's configuration with contextual text off, and on through the server."""
    settings = yaml.safe_load((ROOT / "rag.config.yaml").read_text()) or {}
    settings.pop("sources", None)
    WORK.mkdir(parents=True, exist_ok=True)
    paths = []
    for context in ("none", "llm"):
        variant = {**settings, "indexing": {**settings.get("indexing", {}), "context": context}}
        if context == "llm":
            variant["llm"] = {"provider": "openai", "baseUrl": base_url, "model": model,
                              "maxConcurrency": concurrency, "timeout": timeout, "temperature": temperature}
        path = WORK / f"context-{context}.yaml"
        path.write_text(yaml.safe_dump(variant, sort_keys=False))
        paths.append(path)
    return paths[0], paths[1]


def subset(set_name: str, prefix: str) -> tuple[Path, list[EvalCase]]:
    """The set's copy (under the ``+``-separated prefixes only, copied apart) and the cases answered there."""
    folder = set_dir(set_name)
    if not (folder / "cases.jsonl").exists():
        raise SystemExit(f"{set_name}: build the set first (make eval, or eval/run_eval.py --sets {set_name})")
    prefixes = tuple(prefix.split("+"))
    cases = [c for c in load_cases(folder / "cases.jsonl")
             if all(a.path.startswith(prefixes) for a in c.relevant)]
    if not prefix:
        return folder / "copy", cases
    copy = WORK / f"{set_name}-{hashlib.sha256(prefix.encode()).hexdigest()[:8]}"
    if not copy.exists():
        for path in (folder / "copy").rglob("*"):
            relative = path.relative_to(folder / "copy")
            if path.is_file() and relative.as_posix().startswith(prefixes):
                (copy / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, copy / relative)
    return copy, cases


def index(config: Path, name: str, copy: Path) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    out = json.loads(rag(config, "index", "--path", str(copy), "--name", name, "--json"))
    return out, time.monotonic() - started


def measure(config: Path, name: str, cases: list[EvalCase]) -> dict[str, Metrics]:
    settings = load_config(str(config)).config
    with db.connect(db.resolve_target(settings.database)) as conn:
        searcher = Searcher(conn, settings.search, configured_embedder(settings.embeddings),
                            configured_reranker(settings.reranker))
        return dict(evaluate(searcher, cases, MODES, source=name).metrics)


def run_set(spec: str, off: Path, on: Path) -> str:
    set_name, _, prefix = spec.partition(":")
    copy, cases = subset(set_name, prefix)
    name = f"ctx-{set_name}"
    for listed in rag(off, "list").splitlines()[1:]:  # (vectors and contextual texts stay cached)
        if listed.strip():
            rag(off, "remove", listed.split()[0])
    plain, _ = index(off, name, copy)
    before = measure(off, name, cases)
    contextual, seconds = index(on, name, copy)
    after = measure(on, name, cases)
    chunks = contextual["chunksTotal"]
    failed = sum(1 for e in contextual["fileErrors"] if e["error"].startswith("contextual text of"))
    asked = contextual["contextualized"] + failed
    title = (f"{set_name}{':' + prefix if prefix else ''}: {len(cases)} cases, {chunks:,} chunks; "
             f"{asked:,} LLM requests ({failed} failed) in {seconds:.0f} s, "
             f"{1000 * seconds / max(asked, 1):,.0f} s per 1,000 chunks (embedding included)")
    rows = {f"{mode} before": before[mode] for mode in MODES if mode in before}
    rows.update({f"{mode} after": after[mode] for mode in MODES if mode in after})
    lines = [format_table(rows, title=title)]
    lines += [f"{mode:<7} MRR@10 {before[mode].mrr:.3f} -> {after[mode].mrr:.3f} "
              f"({after[mode].mrr - before[mode].mrr:+.3f})" for mode in MODES if mode in before and mode in after]
    assert plain["chunksTotal"] == chunks, "the second run re-chunked: the sets differ"
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", required=True, help="comma-separated SET[:PREFIX]")
    parser.add_argument("--base-url", required=True, help="an OpenAI-compatible server, e.g. llama.cpp's")
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, default=2, help="llm.maxConcurrency")
    parser.add_argument("--timeout", type=float, default=300.0, help="llm.timeout (seconds per request)")
    parser.add_argument("--temperature", type=float, default=0.0, help="llm.temperature")
    args = parser.parse_args()
    os.chdir(ROOT)
    for variable in [v for v in os.environ if v.startswith("RAG_")]:
        del os.environ[variable]
    os.environ["RAG_HOME"] = str(HOME)
    off, on = write_configs(args.base_url, args.model, args.concurrency, args.timeout, args.temperature)
    rag(off, "init")
    for spec in args.sets.split(","):
        print(run_set(spec, off, on) + "\n", flush=True)


if __name__ == "__main__":
    main()
