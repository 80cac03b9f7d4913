"""``/openapi.json``: the routes of ``rag serve`` described from the same pydantic models the
endpoints parse and answer with, so the document cannot drift from the code."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from rag import __version__
from rag.schemas import AskOutput, SearchOutput, SourcesOutput, SourceText, StatusOutput
from rag.serve.api import AskBody, IndexBody, ReadQuery, RunOutput, SearchBody, SourcesQuery

ERROR = {"description": 'Failure: {"error": "<one line>"}',
         "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _ref(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(model: type[BaseModel], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _query(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True)
    return [{"name": name, "in": "query", "required": False, "schema": prop}
            for name, prop in schema["properties"].items()]


def _op(summary: str, responses: dict[str, Any], body: type[BaseModel] | None = None,
        params: list[dict[str, Any]] | None = None, secured: bool = True) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {**responses, "default": ERROR}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(body)}}}
    if params:
        op["parameters"] = params
    if not secured:
        op["security"] = []
    return op


@cache
def openapi() -> dict[str, Any]:
    models: list[type[BaseModel]] = [SearchBody, AskBody, IndexBody, SearchOutput, AskOutput, SourceText,
                                     SourcesOutput, StatusOutput, RunOutput]
    _, defs = models_json_schema([(m, "serialization") for m in models], by_alias=True,
                                 ref_template="#/components/schemas/{model}")
    schemas = dict(defs.get("$defs", {}))
    schemas["Error"] = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
    sse = {"description": "Server-sent events: sources, token (each piece of the answer), then done "
                          "(an AskOutput) or error; with \"stream\": false, one AskOutput",
           "content": {"text/event-stream": {"schema": {"type": "string"}},
                       "application/json": {"schema": _ref(AskOutput)}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "local-rag", "version": __version__,
                 "description": "Semantic search over indexed code and docs. Every /v1 route and /mcp need "
                                "Authorization: Bearer <token> when the server has tokens."},
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/v1/search": {"post": _op("Hybrid search, as rag search --json", {"200": _json(SearchOutput)},
                                       SearchBody)},
            "/v1/ask": {"post": _op("A question answered by the LLM from the indexed sources", {"200": sse},
                                    AskBody)},
            "/v1/read": {"get": _op("Indexed text by chunkId, or by path with lines or a section",
                                    {"200": _json(SourceText)}, params=_query(ReadQuery))},
            "/v1/sources": {"get": _op("The indexed sources the token may read",
                                       {"200": _json(SourcesOutput)}, params=_query(SourcesQuery))},
            "/v1/status": {"get": _op("Database, providers, index runs, and the token's scope",
                                      {"200": _json(StatusOutput)})},
            "/v1/index": {"post": _op("Start an index run (admin); its id for /v1/runs/{id}",
                                      {"202": _json(RunOutput, "Started")}, IndexBody)},
            "/v1/runs/{run_id}": {"get": _op("An index run's progress and result (admin)",
                                             {"200": _json(RunOutput)},
                                             params=[{"name": "run_id", "in": "path", "required": True,
                                                      "schema": {"type": "integer"}}])},
            "/healthz": {"get": _op("Liveness: the database answers", {"200": {"description": "OK"}},
                                    secured=False)},
            "/mcp": {"post": _op("MCP over Streamable HTTP (JSON-RPC): the tools of rag mcp",
                                 {"200": {"description": "JSON-RPC response or event stream"}})},
        },
    }
