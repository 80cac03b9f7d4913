"""Hostile trees: running `rag` as a user does, on trees and servers built to break it.

Every case runs the installed `rag` in a subprocess against a real database,
with another source already indexed, and checks what README promises: no
traceback, the documented exit code (0 done, per-file errors listed; 1 an
explained error), the sibling files indexed, the other source untouched, and
no secret in any output or in the run record.
"""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from helpers import rows

from rag import db

RAG = str(Path(sys.executable).parent / "rag")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


@dataclass
class Rag:
    """Runs `rag` with one config file and one database; reads the database back."""

    target: db.DatabaseTarget
    config: Path

    def write_config(self, text: str) -> None:
        self.config.write_text(text, encoding="utf-8")

    def __call__(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> Result:
        done = subprocess.run(
            [RAG, "--config", str(self.config), *args], capture_output=True, text=True,
            timeout=timeout, env={**os.environ, "RAG_DATABASE_URL": self.target.url, **(env or {})},
            errors="backslashreplace",
        )
        assert "Traceback" not in done.stderr, done.stderr
        return Result(done.returncode, done.stdout, done.stderr)

    def rows(self, query: str, *params: Any) -> list[dict[str, Any]]:
        return rows(self.target, query, *params)

    def stored_paths(self, source: str) -> set[str]:
        return {r["path"] for r in self.rows(
            "SELECT f.path FROM rag.files f JOIN rag.sources s ON s.id = f.source_id WHERE s.name = %s",
            source)}

    def last_run(self) -> dict[str, Any]:
        return self.rows("SELECT * FROM rag.last_runs(1)")[0]

    def snapshot(self, source: str) -> list[dict[str, Any]]:
        """Everything stored for a source, to show a run of another source left it alone."""
        return self.rows(
            "SELECT f.path, f.sha256, f.indexed_at, array_agg(c.id ORDER BY c.id) AS chunks "
            "FROM rag.files f JOIN rag.sources s ON s.id = f.source_id "
            "LEFT JOIN rag.chunks c ON c.file_id = f.id WHERE s.name = %s GROUP BY 1, 2, 3 ORDER BY 1",
            source)


KEYWORD_ONLY = "embeddings: {provider: none}\n"


def siblings(root: Path, count: int = 3) -> set[str]:
    """Ordinary files next to the hostile ones: they must be indexed whatever happens."""
    root.mkdir(parents=True, exist_ok=True)
    names = {f"sibling{i}.py" for i in range(count)}
    for name in names:
        (root / name).write_text(f"def {name[:-3]}():\n    return 'fine'\n", encoding="utf-8")
    return names


Handler = Callable[[dict[str, Any]], tuple[int, bytes]]


def serve(handler: Handler) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 answering every POST with ``handler(json body)``: (status, body)."""

    class _Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, content = handler(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
