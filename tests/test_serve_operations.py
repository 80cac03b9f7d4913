"""``rag serve`` under operation: deadlines and concurrency limits, clients that leave, the access
log, SIGTERM with a request in flight, and the watcher keeping a served source fresh."""

import json
import logging
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from helpers import RAG
from plugins.serve import SECRETS, TOKENS, Served

from rag import db

pytestmark = pytest.mark.slow


def locked_chunks(target: db.DatabaseTarget) -> psycopg.Connection:
    """A connection holding rag.chunks locked: every search waits until it is closed."""
    conn = psycopg.connect(target.url)
    conn.execute("LOCK TABLE rag.chunks IN ACCESS EXCLUSIVE MODE")
    return conn


def test_a_deadline_stops_a_request_that_waits_on_the_database(serve_app, rag_db) -> None:
    served: Served = serve_app(deadline=1.0)
    lock = locked_chunks(rag_db)
    try:
        started = time.monotonic()
        response = served.client("alice").post("/v1/search", json={"query": "handler"})
        took = time.monotonic() - started
    finally:
        lock.close()
    assert response.status_code == 504 and "deadline" in response.json()["error"]
    assert 0.9 < took < 5
    # The slot and the connection are free again.
    assert served.client("alice").post("/v1/search", json={"query": "handler"}).status_code == 200


def test_a_token_beyond_its_concurrent_requests_waits_then_is_told_busy(serve_app, fake_llm) -> None:
    served: Served = serve_app(deadline=2.0, per_token_concurrent=1)
    fake_llm.reply = lambda messages: " ".join(["word"] * 60)
    fake_llm.word_delay = 0.1  # a 6 s answer holds alice's one slot
    with served.client("alice").stream("POST", "/v1/ask", json={"question": "handler"}) as response:
        lines = response.iter_lines()
        next(line for line in lines if line == "event: token")
        started = time.monotonic()
        busy = served.client("alice").post("/v1/search", json={"query": "handler"})
        waited = time.monotonic() - started
        other = served.client("all").post("/v1/search", json={"query": "handler"})  # another token's slots
        rest = list(lines)
    assert busy.status_code == 503 and "busy" in busy.json()["error"] and busy.headers["retry-after"] == "1"
    assert 1.9 < waited < 5
    assert other.status_code == 200
    assert "event: done" in rest  # the answer outlived the deadline: it kept writing


def test_a_client_leaving_an_ask_stream_stops_the_llm_stream(serve_app, fake_llm) -> None:
    served: Served = serve_app()
    fake_llm.reply = lambda messages: " ".join(["word"] * 200)
    fake_llm.word_delay = 0.05
    with served.client("all").stream("POST", "/v1/ask", json={"question": "secret handler"}) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("event:")) == "event: sources"
        assert next(line for line in lines if line.startswith("event: token"))
    deadline = time.monotonic() + 10  # 200 words would take 10 s to stream
    while fake_llm.streams["abandoned"] == 0:
        assert time.monotonic() < deadline, fake_llm.streams
        time.sleep(0.05)
    assert fake_llm.streams == {"finished": 0, "abandoned": 1}


def access_lines(caplog, count: int) -> list[str]:
    """The access log's lines once there are ``count`` (a line is written after its response)."""
    deadline = time.monotonic() + 10
    while True:
        lines = [r.getMessage() for r in caplog.records if r.name == "rag.serve.access"]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def test_the_access_log_has_a_line_per_request_and_the_query_only_when_asked(serve_app, caplog) -> None:
    caplog.set_level(logging.INFO, logger="rag.serve.access")
    quiet: Served = serve_app()
    quiet.client("alice").post("/v1/search", json={"query": "private words"})
    quiet.client(None).get("/v1/sources")
    lines = access_lines(caplog, 2)
    assert re.fullmatch(r"alice POST /v1/search 200 \d+ms", lines[0]), lines
    assert re.fullmatch(r"- GET /v1/sources 401 \d+ms", lines[1]), lines
    caplog.clear()
    loud: Served = serve_app(log_queries=True)
    loud.client("alice").post("/v1/search", json={"query": "private words"})
    (line,) = access_lines(caplog, 1)
    assert re.fullmatch(r'alice POST /v1/search 200 \d+ms q="private words"', line), line


def test_sigterm_lets_the_request_in_flight_finish_then_stops(rag_db, tmp_path: Path, fake_llm) -> None:
    """rag serve as a user starts it: tokens from the environment, SIGTERM from the init system."""
    config = tmp_path / "rag.yaml"
    config.write_text(f"embeddings: {{provider: none}}\nserve: {{watch: false}}\nllm:\n  provider: openai\n"
                      f"  baseUrl: {fake_llm.base_url}\n  model: fake-chat-1\n  apiKey: ${{LLM_API_KEY}}\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "m.py").write_text("def combine_latest(a, b):\n    return a + b\n")
    env = dict(os.environ, RAG_DATABASE_URL=rag_db.url, RAG_SERVE_TOKENS=json.dumps(TOKENS),
               LLM_API_KEY=fake_llm.api_key)
    assert subprocess.run([RAG, "--config", str(config), "index", "--path", str(project)], env=env,
                          capture_output=True, timeout=120).returncode == 0
    from plugins.serve import free_port

    port = free_port()
    server = subprocess.Popen([RAG, "--config", str(config), "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.1)
        fake_llm.reply = lambda messages: " ".join(["combine"] * 30)
        fake_llm.word_delay = 0.05  # a 1.5 s answer
        headers = {"Authorization": f"Bearer {SECRETS['all']}"}
        with httpx.stream("POST", f"{url}/v1/ask", json={"question": "combine latest"}, headers=headers,
                          timeout=30) as response:
            lines = response.iter_lines()
            next(line for line in lines if line == "event: token")
            server.send_signal(signal.SIGTERM)
            rest = list(lines)
        assert "event: done" in rest
        assert server.wait(30) in (0, -signal.SIGTERM)  # (uvicorn re-raises the signal once it is done)
        log = server.stdout.read() if server.stdout else ""
        assert "all POST /v1/ask 200" in log and "Shutting down" in log
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()


def test_the_watcher_keeps_a_served_source_fresh(serve_app, tmp_path: Path) -> None:
    served: Served = serve_app(watch=True)
    (tmp_path / "alpha" / "fresh.py").write_text("def freshly_written_function():\n    return 1\n")
    deadline = time.monotonic() + 30
    while True:
        found = served.client("alice").post("/v1/search", json={"query": "freshly_written_function"}).json()
        if any(r["path"] == "fresh.py" for r in found["results"]):
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.3)
