"""`rag eval --json` lists each query's result per mode (#42.6): which queries failed, and at
which rank the others found their answer."""

import json
from pathlib import Path

from helpers import rag_process
from plugins.mcp import make_project

from rag import db


def test_eval_json_has_a_row_per_query(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = make_project(tmp_path / "proj")
    assert rag_process("index", "--path", str(root), "--name", "proj", database=rag_db).returncode == 0
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"id": "found", "query": "combineLatest", "relevant": [{"path": "src/stream.ts"}]}) + "\n"
        + json.dumps({"id": "missed", "query": "combine latest values", "relevant": [{"path": "nowhere.md"}]}) + "\n")
    done = rag_process("eval", str(cases), "--mode", "bm25", "--json", database=rag_db)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["metrics"]["bm25"]["queries"] == 2
    assert out["queries"] == {"bm25": [
        {"id": "found", "query": "combineLatest", "rank": 1, "ndcg@10": 1.0},
        {"id": "missed", "query": "combine latest values", "rank": None, "ndcg@10": 0.0}]}
