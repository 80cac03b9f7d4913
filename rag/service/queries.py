"""The service's questions of the index: searches, answers (``rag ask``), stored text read back,
and the code graph; each over a ``rag.*`` function (``rag.search.Searcher``, ``rag.ask``,
``rag.graph``)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag import sqlapi
from rag.errors import RagError, first_line
from rag.schemas import (
    Coordinates,
    Scores,
    SearchOutput,
    SearchResult,
    SourceText,
    SymbolsOutput,
    TraversalOutput,
)
from rag.service.indexing import Indexing

if TYPE_CHECKING:
    from rag.ask import Answering, AskRequest
    from rag.db import Conn
    from rag.search import Searcher, SearchRequest, SearchResponse

log = logging.getLogger(__name__)

SNIPPET_CHARS = 500


class Queries(Indexing):
    """Search, ask, read-back and the code graph (whose rebuild after a crash is an index run)."""

    def search_response(self, request: SearchRequest) -> SearchResponse:
        """The hits of one search, with everything a front end may show of them."""
        if request.languages:
            request = dataclasses.replace(request, languages=known_languages(request.languages))
        return self.with_db(lambda conn: self.searcher(conn).search(request))

    def searcher(self, conn: Conn) -> Searcher:
        """A searcher over ``conn`` with this configuration's models and settings."""
        from rag.search import Searcher

        return Searcher(conn, self.config.search, self.embedder(), self.reranker(), self.interface)

    def search(self, request: SearchRequest) -> SearchOutput:
        response = self.search_response(request)
        return SearchOutput(query=request.query, results=[search_result(hit) for hit in response.hits],
                            warnings=response.warnings)

    def ask(self, request: AskRequest) -> Answering:
        """A question's sources, searched (and, as asked, rewritten and filtered by the LLM);
        the answer then streams from the result."""
        from rag.ask import Asker

        return Asker(self.chat_model(), self.search_response, self.config).prepare(request)

    # -- read-back ----------------------------------------------------------

    def read_source(
        self,
        chunk_id: int | None = None,
        source: str | None = None,
        path: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        header_path: str | None = None,
        context: int = 0,
    ) -> SourceText:
        """Stored text by chunk id, or by path with a line range or a markdown section."""
        if chunk_id is not None:
            if path or start_line or end_line or header_path:
                raise RagError("chunkId already names the lines to read; drop path, startLine, endLine and "
                               "headerPath (use context for lines around it)")
            text = self.with_db(lambda conn: _source_text(sqlapi.read_chunk(conn, chunk_id, context)))
            text.chunk_id = chunk_id
            return text
        if not path:
            raise RagError("say what to read: a chunkId from search results, or a path "
                           "(with source when several sources hold it)")
        if header_path and (start_line or end_line):
            raise RagError("give headerPath or startLine/endLine, not both")
        if start_line and end_line and end_line < start_line:
            raise RagError(f"endLine {end_line} is before startLine {start_line}")
        given = str(Path(path.strip()).expanduser()) if path.strip().startswith("~") else path
        return self.with_db(lambda conn: _source_text(sqlapi.read_file_range(
            conn, source, given, start_line, end_line, header_path, context)))

    # -- code graph -----------------------------------------------------------

    def find_symbols(self, name: str, sources: list[str] | None = None, kinds: list[str] | None = None,
                     limit: int = 50) -> SymbolsOutput:
        """Definitions named ``name`` (a name, an fqn or ``path:fqn``), at most ``limit``, with the count."""
        from rag import graph

        self._graph_whole()
        return self.with_db(lambda conn: graph.find_symbols(conn, name, sources, kinds, limit))

    def traverse(self, symbol: str, relation: str, direction: str, depth: int = 1,
                 sources: list[str] | None = None, dynamic: bool = False) -> TraversalOutput:
        """Definitions ``depth`` edges of ``relation`` (calls, inherits, imports, contains) away from
        ``symbol``: ``direction`` in (callers, subclasses) or out (callees, superclasses);
        ``dynamic``: also calls on receivers of unknown type (every method of that name)."""
        from rag import graph

        self._graph_whole()
        return self.with_db(lambda conn: graph.traverse(conn, symbol, relation, direction, depth, sources,
                                                        dynamic=dynamic))

    def _graph_whole(self) -> None:
        """A database crash empties the code graph (its tables are unlogged): before a graph call
        answers, each source awaiting it has an index run (which reads only what changed and the
        code files the crash left without a graph; nothing is fetched), said on the log first."""
        for name, files in self.with_db(sqlapi.graph_awaiting_rebuild).items():
            spec = self.indexed_source(name)
            if spec is None:
                continue
            log.warning("rebuilding the code graph of %s (%d code files), which a database crash emptied",
                        name, files)
            try:
                self.index(spec, fetch=False)
            except RagError as exc:  # (the answer is then partial; status says which files wait)
                log.warning("the code graph of %s is not rebuilt: %s", name, first_line(exc))


def known_languages(given: list[str]) -> list[str]:
    """The languages ``given`` names (``ts``, ``Python``, ``golang``, ``c++``), or an error listing
    the valid names: a filter no chunk can match would silently find nothing."""
    from rag.languages.detection import language_name, language_names

    names = [language_name(g) for g in given]
    unknown = [g for g, name in zip(given, names, strict=True) if name is None]
    if unknown:
        raise RagError(f"unknown language {', '.join(map(repr, unknown))}; use a name such as python, "
                       "typescript, javascript, go, cpp, markdown, text, or a file extension (ts, py); "
                       f"all names: {', '.join(sorted(language_names()))}")
    return sorted({n for n in names if n is not None})


def search_result(hit: Any) -> SearchResult:
    """A ``rag.search.SearchHit`` as both front ends show it."""
    return SearchResult(
        chunk_id=hit.chunk_id, source_name=hit.source_name, path=hit.path, source_type=hit.source_type,
        language=hit.language, absolute_path=hit.absolute_path, url=hit.url, fqns=hit.fqns,
        header_paths=hit.header_paths, contextual_text=hit.contextual_text,
        start_line=hit.coordinates.get("startLine"), end_line=hit.coordinates.get("endLine"),
        coordinates=Coordinates.model_validate(hit.coordinates), snippet=hit.content[:SNIPPET_CHARS],
        scores=Scores(bm25=hit.bm25, vector=hit.vector, score=hit.score, fusion=hit.fusion, rerank=hit.rerank,
                      bm25_rank=hit.bm25_rank, vector_rank=hit.vector_rank),
    )


def _source_text(row: dict[str, Any]) -> SourceText:
    """A ``rag.excerpt`` row (read_chunk, read_file_range)."""
    return SourceText(source_name=row["source_name"], path=row["path"], source_type=row["source_type"],
                      language=row["language"], start_line=row["start_line"], end_line=row["end_line"],
                      total_lines=row["total_lines"], content=row["content"], truncated=row["truncated"],
                      metadata=row["metadata"], contextual_text=row["contextual_text"])
