"""A search as the CLI and MCP server run it: embed the query → ``rag.search()`` → rerank.

Ranking, fusion and filtering are the SQL function's; this module only supplies
the query vector (stored with ``rag.remember_query_embedding`` so a later call
from psql, or the same query again, needs no model) and applies the reranker.
A reranker failure returns the fused order with a warning, never an error.
"""

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag import db, sqlapi
from rag.config import SearchConfig
from rag.errors import ProviderError, RagError, first_line
from rag.hints import NOTHING_INDEXED, Hint, Interface, with_hint
from rag.providers import Embedder, vector_literal
from rag.providers.rerank_base import Reranker

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
    rrf: float
    rerank: float | None = None
    language: str | None = None
    fqns: list[str] | None = None  # the names a chunk holding several small definitions carries
    header_paths: list[str] | None = None  # the headerPath of each section a merged chunk holds
    sections: list[dict[str, Any]] | None = None  # and its lines: {headerPath, startLine, endLine}
    abs_path: str | None = None  # a local source's file, as a user can open it
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

    def __init__(self, conn: db.Conn, settings: SearchConfig,
                 embedder: Embedder, reranker: Reranker, model_languages: list[str] | None = None,
                 interface: Interface = "cli") -> None:
        self.conn = conn
        self.interface = interface  # whose words the warnings' hints are in
        self.settings = settings
        self.embedder = embedder
        self.reranker = reranker
        self.model_languages = model_languages  # what the embedder reads (None: any language)
        db.ensure_keyword_data(conn)  # rebuilt here if a database crash emptied it

    def search(self, request: SearchRequest) -> SearchResponse:
        query = request.query.strip()
        if not query:
            raise RagError("the query is empty; give some words to search for")
        if len(query) > QUERY_MAX_CHARS:
            raise RagError(f"the query has {len(query):,} characters; "
                           f"keep it to {QUERY_MAX_CHARS:,} or fewer")
        final_k = request.top_k or self.settings.final_top_k
        use_reranker = request.rerank and self.reranker.name != "none"
        candidates = max(self.settings.retrieve_top_k, final_k)
        warnings: list[str] = []
        share = self._readable_share(query, request)
        if share < 1.0:
            languages = self.model_languages or []
            warnings.append(unreadable_query_warning(self.embedder.model_id, languages, share))
        # A query the model cannot read at all is not embedded (nor the model loaded for it).
        embedding = (None if request.keyword_only or share <= 0.0
                     else self._query_vector(query, request.sources, warnings))
        if request.vector_only and embedding is None:
            why = warnings[0] if warnings else "embeddings.provider is none, so the index holds no vectors"
            raise RagError(f"a vector search needs vectors of the embedding model: {why}")
        rows = sqlapi.search(
            self.conn, query, embedding, candidates if use_reranker else final_k,
            sources=request.sources, source_types=request.source_types,
            languages=request.languages, path_prefix=request.path_prefix,
            bm25_weight=0.0 if request.vector_only else self.settings.bm25_weight,
            # No vector of this config's model: keywords alone, never a query vector another
            # model stored for the same text (rag.search would pick one up when given none).
            vector_weight=0.0 if embedding is None else self.settings.vector_weight * share,
            rrf_k=self.settings.rrf.k, candidates=candidates,
            model=self.embedder.model_id if self.embedder.dimensions else None,
            k1=self.settings.bm25.k1, b=self.settings.bm25.b, fusion=self.settings.fusion,
            graph_weight=self.settings.graph_weight, names_weight=self.settings.names_weight,
            files_weight=self.settings.files_weight,
            priors=self.settings.priors or None,
            per_file=request.per_file or self.settings.per_file, include_tests=request.include_tests,
        )
        hits = [_hit(row) for row in rows]
        if not hits and not sqlapi.list_sources(self.conn, max_rows=1):
            # Said as `rag list` says it: the other warnings (no vectors) follow from this one.
            return SearchResponse([], [with_hint(NOTHING_INDEXED, Hint("index_folder"), self.interface)])
        self._add_absolute_paths(hits)
        self._add_contextual_texts(hits)
        response = SearchResponse(hits, warnings)
        if use_reranker and hits:
            response.hits = self._rerank(query, hits, final_k, response.warnings)
        return response

    def _readable_share(self, query: str, request: SearchRequest) -> float:
        """What the vector arm's weight is scaled by in a hybrid search: the share of the query's
        words the model reads, so an English-only model adds nothing to a Russian question's
        keywords (1 for a model of any language, and for a search of one arm)."""
        if (self.model_languages is None or not self.embedder.dimensions
                or request.keyword_only or request.vector_only):
            return 1.0
        return sqlapi.readable_share(self.conn, query, self.model_languages)

    def _add_absolute_paths(self, hits: list[SearchHit]) -> None:
        names = sorted({h.source_name for h in hits})
        if not names:
            return
        roots = sqlapi.local_roots(self.conn, names)
        for hit in hits:
            if hit.source_name in roots:
                hit.abs_path = str(Path(roots[hit.source_name]) / hit.path)

    def _add_contextual_texts(self, hits: list[SearchHit]) -> None:
        if not hits:
            return
        texts = sqlapi.chunk_contextual_texts(self.conn, [h.chunk_id for h in hits])
        for hit in hits:
            hit.contextual_text = texts.get(hit.chunk_id)

    def _query_vector(self, query: str, sources: list[str] | None, warnings: list[str]) -> str | None:
        """The query's embedding as pgvector text, stored for reuse; None for a keyword-only index
        (a configured model without vectors in the searched sources adds a warning saying the
        answer is keyword-only)."""
        if not self.embedder.dimensions:
            return None
        model = self.embedder.model_id
        if not sqlapi.has_model(self.conn, model):
            unread = (f" (texts in languages other than {', '.join(self.model_languages)} are never embedded "
                      "with it)" if self.model_languages is not None else "")
            warnings.append(f"no vectors of the embedding model {model} are stored, so this answer is "
                            f"keyword-only; {Hint('index_all').render(self.interface)}{unread}")
            return None
        if sources and not sqlapi.sources_have_vectors(self.conn, model, sources):
            warnings.append(f"the sources searched ({', '.join(sources)}) have no vectors of the embedding "
                            f"model {model}, so this answer is keyword-only; index them again to embed them")
            return None
        vector = (sqlapi.stored_query_embedding(self.conn, model, query)
                  or vector_literal(self.embedder.embed_query(query)))
        sqlapi.remember_query_embedding(self.conn, model, query, vector)
        return vector

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


MULTILINGUAL_FIX = ("for meaning-based search in other languages set a multilingual embedding model: "
                    "embeddings.local.model (e.g. intfloat/multilingual-e5-small, "
                    "with embeddings.local.languages), "
                    "embeddings.provider: jina (jina-embeddings-v3), or an OpenAI-compatible embedder "
                    "(embeddings.provider: openai with embeddings.openai.baseUrl)")


def unreadable_query_warning(model: str, languages: list[str], share: float) -> str:
    """What a search says when the embedding model cannot read (some of) the query's words."""
    reads = ", ".join(languages)
    if share <= 0.0:
        what = "this query was searched by keywords alone (no vector arm)"
    else:
        what = f"the vector arm counts {share:.0%} for this query (the share of its words the model reads)"
    return f"the embedding model {model} reads only {reads}, so {what}; {MULTILINGUAL_FIX}"


def _hit(row: dict[str, Any]) -> SearchHit:
    metadata = row["metadata"] or {}
    return SearchHit(
        chunk_id=row["chunk_id"], source_name=row["source_name"], path=row["path"],
        source_type=row["source_type"] or "", content=row["content"],
        coordinates={k: metadata[k] for k in COORDINATE_KEYS if metadata.get(k) is not None},
        bm25=row["bm25_score"], bm25_rank=row["bm25_rank"],
        vector=row["vector_score"], vector_rank=row["vector_rank"], rrf=row["score"],
        language=row["language"], fqns=metadata.get("fqns"),
        header_paths=[p["headerPath"] for p in metadata["sections"]] if "sections" in metadata else None,
        sections=metadata.get("sections"),
        url=metadata.get("url"), title=_page_title(metadata),
    )


def _page_title(metadata: dict[str, Any]) -> str | None:
    """A Confluence page's title (an attachment's: the page's / its file name); None elsewhere."""
    if not metadata.get("url") or not metadata.get("title"):
        return None
    attachment = metadata.get("attachment")
    return f"{metadata['title']} / {attachment}" if attachment else str(metadata["title"])
