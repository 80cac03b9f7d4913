"""A search as the CLI and MCP server run it: embed the query → ``rag.search()`` → rerank.

Ranking, fusion, filtering, the model checks and the vector arm's scaling by the query's script
are the SQL function's, in one round trip; this module supplies the query vector (which
``rag.search`` keeps, so a later call from psql needs no model), the options the user set, and
the reranker. What the search found out on the way (its NOTICEs) becomes warnings. A reranker
failure returns the fused order with a warning, never an error.
"""

import logging
from dataclasses import dataclass, field
from typing import Any

from rag import db, sqlapi
from rag.config import SearchConfig
from rag.errors import ProviderError, RagError, first_line
from rag.hints import NOTHING_INDEXED, Interface, from_sql, with_hint
from rag.providers import Embedder, vector_literal
from rag.providers.rerank_base import Reranker
from rag.storable import make_storable

log = logging.getLogger(__name__)

QUERY_MAX_CHARS = 10_000


@dataclass(frozen=True)
class SearchRequest:
    query: str
    top_k: int | None = None  # default: search.finalTopK
    sources: list[str] | None = None
    source_types: list[str] | None = None
    languages: list[str] | None = None
    path_prefix: str | None = None
    rerank: bool = True
    keyword_only: bool = False
    vector_only: bool = False
    per_file: int | None = None  # default: search.perFile
    include_tests: bool = False  # tests and fixtures at full weight


@dataclass
class SearchHit:
    chunk_id: int
    source_name: str
    path: str
    source_type: str
    content: str
    coordinates: dict[str, Any]
    bm25: float | None
    bm25_rank: int | None
    vector: float | None
    vector_rank: int | None
    score: float  # the fused score
    fusion: str  # how it was fused: rrf | scores
    rerank: float | None = None
    language: str | None = None
    fqns: list[str] | None = None  # the names a chunk holding several small definitions carries
    header_paths: list[str] | None = None  # the headerPath of each section a merged chunk holds
    sections: list[dict[str, Any]] | None = None  # and its lines: {headerPath, startLine, endLine}
    absolute_path: str | None = None  # a local source's file, as a user can open it
    contextual_text: str | None = None  # what an LLM wrote to situate it (indexing.context: llm)
    url: str | None = None  # a Confluence page's web address
    title: str | None = None  # a Confluence page's title


@dataclass
class SearchResponse:
    hits: list[SearchHit]
    warnings: list[str] = field(default_factory=list)


COORDINATE_KEYS = ("startLine", "endLine", "fqn", "fragmentType", "headerPath", "pageStart", "pageEnd")


class Searcher:
    """Holds the embedder and reranker so a batch of queries loads each model once."""

    def __init__(self, conn: db.Conn, settings: SearchConfig, embedder: Embedder, reranker: Reranker,
                 interface: Interface = "cli") -> None:
        self.conn = conn
        self.interface = interface  # whose words the warnings' hints are in
        self.settings = settings
        self.embedder = embedder
        self.reranker = reranker
        db.ensure_keyword_data(conn)  # rebuilt here if a database crash emptied it

    def search(self, request: SearchRequest) -> SearchResponse:
        # NUL (PostgreSQL's text refuses it) is a space; a lone surrogate U+FFFD
        query = make_storable(request.query.replace("\x00", " "))[0].strip()
        if not query:
            raise RagError("the query is empty; give some words to search for")
        if len(query) > QUERY_MAX_CHARS:
            raise RagError(f"the query has {len(query):,} characters; "
                           f"keep it to {QUERY_MAX_CHARS:,} or fewer")
        final_k = request.top_k or self.settings.final_top_k
        use_reranker = request.rerank and self.reranker.name != "none"
        if request.vector_only and not self.embedder.dimensions:
            raise RagError("a vector search needs vectors of the embedding model: "
                           "embeddings.provider is none, so the index holds no vectors")
        embedding = None
        if not request.keyword_only and self.embedder.dimensions:
            embedding = vector_literal(self.embedder.embed_query(query))
        rows, notices = sqlapi.search(
            self.conn, query, embedding,
            max(self.settings.retrieve_top_k, final_k) if use_reranker else final_k,
            _filters(request), self._options(request, embedding is not None))
        warnings = [with_hint(n.message, from_sql(n.hint), self.interface) for n in notices]
        if not rows and any(n.message == NOTHING_INDEXED for n in notices):
            # Said as `rag list` says it: the other warnings (no vectors) follow from this one.
            return SearchResponse([], [w for w in warnings if w.startswith(NOTHING_INDEXED)])
        if request.vector_only and not rows and warnings:
            raise RagError(f"a vector search needs vectors of the embedding model: {warnings[0]}")
        response = SearchResponse([_hit(row) for row in rows], warnings)
        if use_reranker and response.hits:
            response.hits = self._rerank(query, response.hits, final_k, response.warnings)
        return response

    def _options(self, request: SearchRequest, with_vector: bool) -> dict[str, Any]:
        """rag.search's options: those the configuration sets (the rest are the SQL defaults,
        rag.search_options), the request's own, and the query vector's model."""
        options = search_options(self.settings)
        if with_vector:
            options["model"] = self.embedder.model_id
        else:
            # Keywords alone, never a query vector another model stored for the same text.
            options["vectorWeight"] = 0
        if request.vector_only:
            options["bm25Weight"] = 0
        if request.per_file:
            options["perFile"] = request.per_file
        if request.include_tests:
            options["includeTests"] = True
        return options

    def model_has_vectors(self) -> bool:
        """Whether the index holds vectors of this searcher's embedding model."""
        return bool(self.embedder.dimensions) and sqlapi.has_model(self.conn, self.embedder.model_id)

    def _rerank(self, query: str, hits: list[SearchHit], top_k: int, warnings: list[str]) -> list[SearchHit]:
        try:
            ranked = self.reranker.rerank(query, [h.content for h in hits], top_k)
        except ProviderError as exc:
            # One line, said once: the front end shows the warning (no log line repeating it).
            warnings.append(f"reranker failed, results are in fused order: {first_line(exc)}")
            log.debug("reranker failed", exc_info=True)
            return hits[:top_k]
        reranked = []
        for result in ranked:
            hit = hits[result.index]
            hit.rerank = result.score
            reranked.append(hit)
        return reranked


def search_options(settings: SearchConfig) -> dict[str, Any]:
    """The keys of the ``search`` section a configuration sets, as ``rag.search_options`` names them
    (the section's own names; ``finalTopK``, ``languages`` and ``lemmas`` are not ranking knobs)."""
    return settings.model_dump(mode="json", by_alias=True, exclude_unset=True,
                               exclude={"final_top_k", "languages", "lemmas"})


def _filters(request: SearchRequest) -> dict[str, Any]:
    given = {"sources": request.sources, "types": request.source_types, "languages": request.languages,
             "pathPrefix": request.path_prefix}
    return {name: value for name, value in given.items() if value}


def _hit(row: dict[str, Any]) -> SearchHit:
    metadata = row["metadata"] or {}
    return SearchHit(
        chunk_id=row["chunk_id"], source_name=row["source_name"], path=row["path"],
        source_type=row["source_type"] or "", content=row["content"],
        coordinates={k: metadata[k] for k in COORDINATE_KEYS if metadata.get(k) is not None},
        bm25=row["bm25_score"], bm25_rank=row["bm25_rank"],
        vector=row["vector_score"], vector_rank=row["vector_rank"], score=row["score"], fusion=row["fusion"],
        language=row["language"], fqns=metadata.get("fqns"),
        header_paths=[p["headerPath"] for p in metadata["sections"]] if "sections" in metadata else None,
        sections=metadata.get("sections"), absolute_path=row["absolute_path"],
        contextual_text=row["contextual_text"], url=row["url"], title=_page_title(metadata),
    )


def _page_title(metadata: dict[str, Any]) -> str | None:
    """A Confluence page's title (an attachment's: the page's / its file name); None elsewhere."""
    if not metadata.get("url") or not metadata.get("title"):
        return None
    attachment = metadata.get("attachment")
    return f"{metadata['title']} / {attachment}" if attachment else str(metadata["title"])
