"""``rag serve`` used as its users do: the JSON API with httpx, MCP with the SDK's Streamable HTTP
client, against uvicorn on 127.0.0.1 over a real database with two sources (tests/plugins/serve.py).
A reader token granted alpha never gets a row of beta, by any door."""

import json
import re
import time
from typing import Any

import anyio
import httpx
import pytest
from plugins.serve import SECRETS, Served

pytestmark = pytest.mark.slow


def sse_events(response: httpx.Response) -> list[tuple[str, Any]]:
    events, name, data = [], "message", ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data += line.removeprefix("data:").strip()
        elif not line and data:
            events.append((name, json.loads(data)))
            name, data = "message", ""
    return events


def test_search_answers_the_json_of_rag_search(serve_app) -> None:
    served: Served = serve_app()
    response = served.client("all").post("/v1/search", json={"query": "secret handler", "topK": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["query"] == "secret handler" and body["warnings"] == []
    assert {r["sourceName"] for r in body["results"]} == {"alpha", "beta"}
    first = body["results"][0]
    assert {"chunkId", "path", "startLine", "endLine", "coordinates", "snippet", "scores"} <= set(first)
    # The same search in-process gives the same results.
    from rag.search import SearchRequest

    direct = served.service.search(SearchRequest("secret handler", top_k=5))
    assert [r["chunkId"] for r in body["results"]] == [r.chunk_id for r in direct.results]
    only_md = served.client("all").post("/v1/search", json={"query": "handler", "sourceType": "markdown"}).json()
    assert {r["path"] for r in only_md["results"]} == {"guide.md"}


def test_no_token_no_data_and_errors_are_one_line_json(serve_app) -> None:
    served: Served = serve_app()
    anonymous = served.client(None)
    for method, path in (("POST", "/v1/search"), ("GET", "/v1/sources"), ("GET", "/v1/status"),
                         ("GET", "/v1/read?chunkId=1"), ("POST", "/v1/ask"), ("POST", "/mcp")):
        response = anonymous.request(method, path, json={"query": "x"})
        assert response.status_code == 401, path
        assert response.json() == {"error": "a token is required: send Authorization: Bearer <token>"}
        assert response.headers["www-authenticate"] == "Bearer"
    wrong = anonymous.get("/v1/sources", headers={"Authorization": "Bearer not-a-token-at-all"})
    assert (wrong.status_code, wrong.json()) == (401, {"error": "the token is not valid"})
    assert anonymous.get("/healthz").json()["status"] == "ok"
    document = anonymous.get("/openapi.json").json()
    routes = {r.path for r in served.app.routes if r.path not in ("/", "/static", "/openapi.json")}
    assert set(document["paths"]) == routes  # every route described
    refs = set(re.findall(r'"#/components/schemas/(\w+)"', json.dumps(document)))
    assert refs and refs <= set(document["components"]["schemas"])
    assert anonymous.get("/").status_code == 200  # the page holds no data
    bad = served.client("all").post("/v1/search", json={"query": ""})
    assert bad.status_code == 400 and "\n" not in bad.json()["error"] and "query" in bad.json()["error"]
    forbidden = served.client("all").post("/v1/index", json={"source": "alpha"})
    assert forbidden.status_code == 403
    assert forbidden.json() == {"error": "token 'all' has read scope; index needs an admin token"}


def test_a_reader_of_alpha_never_sees_beta_through_the_api(serve_app) -> None:
    served: Served = serve_app()
    alice, boss = served.client("alice"), served.client("boss")
    found = alice.post("/v1/search", json={"query": "beta secret handler guide", "topK": 20}).json()
    assert found["results"] and {r["sourceName"] for r in found["results"]} == {"alpha"}
    asked = alice.post("/v1/search", json={"query": "handler", "source": "beta"})
    assert asked.status_code == 403 and "may not read source 'beta'" in asked.json()["error"]
    assert [s["name"] for s in alice.get("/v1/sources").json()["sources"]] == ["alpha"]
    status = alice.get("/v1/status").json()
    assert status["database"]["totalSources"] == 1 and status["token"] == {
        "name": "alice", "scope": "read", "sources": ["alpha"]}
    assert status["database"]["url"] is None and status["config"]["path"] is None
    beta_ids = [r["chunkId"] for r in boss.post("/v1/search", json={"query": "beta", "source": "beta"}).json()["results"]]
    assert beta_ids
    for chunk_id in beta_ids:
        read = alice.get("/v1/read", params={"chunkId": chunk_id})
        assert read.status_code == 400, read.text
        assert "beta" not in read.json()["error"].replace("beta.py", "")
    by_path = alice.get("/v1/read", params={"source": "beta", "path": "beta.py"})
    assert by_path.status_code == 400
    assert boss.get("/v1/read", params={"source": "beta", "path": "beta.py"}).json()["content"].startswith("def beta")


def test_a_token_granted_a_source_not_indexed_yet_searches_the_others(serve_app) -> None:
    served: Served = serve_app()
    found = served.client("early").post("/v1/search", json={"query": "secret handler"})
    assert found.status_code == 200, found.text
    assert {r["sourceName"] for r in found.json()["results"]} == {"alpha"}


def test_ask_streams_the_answer_then_citations_of_granted_sources_only(serve_app, fake_llm) -> None:
    served: Served = serve_app()
    fake_llm.reply = lambda messages: "The handler returns x [1]."
    with served.client("alice").stream("POST", "/v1/ask", json={"question": "what does the secret handler do?"}) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done" and names.count("token") >= 3
    assert "".join(data["text"] for name, data in events if name == "token") == "The handler returns x [1]."
    done = events[-1][1]
    assert done["answer"] == "The handler returns x [1]." and done["citations"]
    assert {c["sourceName"] for c in done["citations"]} == {"alpha"}
    prompt = fake_llm.requests[-1]["messages"][0]["content"]
    assert "alpha_secret_handler" in prompt and "beta" not in prompt
    whole = served.client("all").post("/v1/ask", json={"question": "secret handler", "stream": False}).json()
    assert whole["found"] and {c["sourceName"] for c in whole["citations"]} == {"alpha", "beta"}


def test_an_admin_starts_an_index_run_and_follows_it(serve_app) -> None:
    served: Served = serve_app()
    boss = served.client("boss")
    started = boss.post("/v1/index", json={"source": "alpha", "force": True})
    assert started.status_code == 202, started.text
    run_id = started.json()["id"]
    deadline = time.monotonic() + 60
    while (run := boss.get(f"/v1/runs/{run_id}").json())["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert run["status"] == "succeeded" and run["result"]["source"] == "alpha" and run["startedBy"] == "boss"
    assert boss.get("/v1/runs/999").status_code == 404
    assert served.client("alice").get(f"/v1/runs/{run_id}").status_code == 403


async def _mcp(url: str, token: str, body: Any) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {SECRETS[token]}"})
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        return await body(client)


def test_mcp_over_http_has_the_tools_of_rag_mcp_and_honours_grants(serve_app) -> None:
    from rag.mcp_server import build_server

    served: Served = serve_app()

    async def session(client: Any) -> Any:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        found = await client.call_tool("search", {"query": "beta secret handler guide", "topK": 20})
        sources = await client.call_tool("list_sources", {})
        beta = await client.call_tool("read_source", {"source": "beta", "path": "beta.py"})
        removed = await client.call_tool("remove_source", {"name": "alpha"})
        status = await client.call_tool("status", {})
        symbols = await client.call_tool("find_symbol", {"name": "beta_secret_handler"})
        return tools, found, sources, beta, removed, status, symbols

    tools, found, sources, beta, removed, status, symbols = anyio.run(_mcp, served.url, "alice", session)

    async def stdio_tools() -> list[str]:
        return sorted(t.name for t in (await build_server(served.service, preload=False).list_tools()))

    assert tools == anyio.run(stdio_tools)  # one registry
    assert not found.is_error and {r["sourceName"] for r in found.structured_content["results"]} == {"alpha"}
    assert [s["name"] for s in sources.structured_content["sources"]] == ["alpha"]
    assert beta.is_error
    assert removed.is_error and "read scope" in removed.content[0].text
    assert status.structured_content["database"]["totalSources"] == 1 and status.structured_content["watch"] is None
    assert symbols.structured_content["total"] == 0  # beta's definitions are not there for alice
    assert [s["name"] for s in served.client("boss").get("/v1/sources").json()["sources"]] == ["alpha", "beta"]


def test_without_tokens_it_serves_loopback_only(serve_app) -> None:
    from rag.config import ServeConfig
    from rag.errors import ConfigError
    from rag.serve.access import Tokens, check_bind

    with pytest.raises(ConfigError, match=r"without tokens rag serve listens on 127\.0\.0\.1 only"):
        check_bind("0.0.0.0", Tokens({}))
    check_bind("127.0.0.1", Tokens({}))
    served: Served = serve_app(tokens=False)
    assert served.client(None).get("/v1/sources").json()["sources"][0]["name"] == "alpha"
    rebound = served.client(None).get("/v1/sources", headers={"Host": "attacker.example:8765"})
    assert rebound.status_code == 403 and "127.0.0.1 or localhost only" in rebound.json()["error"]
    assert ServeConfig().deadline == 30.0
