"""Answering a question from the index: retrieve → (rewrite) → (filter) → an answer citing [n].

Owns the question-time use of the LLM (``rag ask``): turning the question into up to three
search queries (``rewrite``) and fusing their hits; asking the LLM which chunks help
(``filter``, a relevance judge per chunk); fitting the chunks into a token budget; and the
answer itself, streamed, from the versioned prompt ``rag/prompts/ask_v2.txt``. Retrieval is
the service's search with the caller's filters: nothing here ranks. When no chunk is left
the answer is "not found" (in the question's language), and the LLM is not asked to make one up.

Whether an answer was found does not depend on the words the model chose: the prompt asks
for the fixed marker ``NOT_FOUND`` when the sources do not answer, the output replaces it with
the not-found line in the question's language, and an answer that cites no source counts as
not found either.
"""

import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rag import prompts
from rag.config import RagConfig
from rag.errors import ProviderError, RagError, first_line
from rag.providers.llm import ChatMessage, ChatModel, ChatResult, ChatStream, complete_each
from rag.schemas import AskOutput, AskTimings, AskTokens, Citation
from rag.search import SearchHit, SearchRequest, SearchResponse

NOT_FOUND = "not found in the indexed sources"
NOT_FOUND_RU = "не найдено в проиндексированных источниках"
NOT_FOUND_MARKER = "NOT_FOUND"  # what the prompt asks the model to write when the sources do not answer
ASK_PROMPT = "ask_v2"
REWRITE_PROMPT = "rewrite_v1"
FILTER_PROMPT = "filter_v1"
ANSWER_TOKENS = 512  # room kept for the answer in the model's window
MAX_QUERIES = 3
_QUERY_MAX_CHARS = 200  # a longer "query" is the model rambling, not a query
# Code tokenizes densely: about three characters per token errs on the safe side.
_CHARS_PER_TOKEN = 3
_CITED = re.compile(r"\[(\d+)\]")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)]|query\s*\d*:)\s*", re.IGNORECASE)
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_MARKER_DECORATION = " \t\r\n.*`\"'«»"  # what a model may wrap the marker in

Search = Callable[[SearchRequest], SearchResponse]


@dataclass(frozen=True)
class AskRequest:
    search: SearchRequest  # the question as ``query``, with the filters and -k of ``rag search``
    rewrite: bool = False  # let the LLM write up to three queries first
    filter: bool = False  # let the LLM drop chunks it judges irrelevant
    context_tokens: int | None = None  # the sources' budget; default: the model's window less the rest


@dataclass(frozen=True)
class Source:
    number: int
    hit: SearchHit
    score: float
    text: str  # as the prompt shows it, cut when the first source alone exceeds the budget

    @property
    def location(self) -> str:
        return location(self.hit)


def location(hit: SearchHit) -> str:
    """Where a chunk is, as a citation prints it: ``path:start-end`` (pages for a PDF); a
    Confluence page by its title and web address."""
    if hit.url:
        section = hit.coordinates.get("section")
        return f"{hit.title or hit.path}{f' › {section}' if section else ''} — {hit.url}"
    start, end = hit.coordinates.get("startLine"), hit.coordinates.get("endLine")
    if start is not None:
        return f"{hit.path}:{start}-{end if end is not None else start}"
    page_start, page_end = hit.coordinates.get("pageStart"), hit.coordinates.get("pageEnd")
    if page_start is not None:
        return f"{hit.path} p.{page_start}-{page_end if page_end is not None else page_start}"
    return hit.path


def not_found_line(question: str) -> str:
    """"Not found" in the question's language: Russian for a question with Cyrillic, else English."""
    return NOT_FOUND_RU if _CYRILLIC.search(question) else NOT_FOUND


def _may_become_marker(text: str) -> bool:
    """Whether the answer so far could still turn out to be the bare not-found marker."""
    return NOT_FOUND_MARKER.startswith(text.lstrip(_MARKER_DECORATION).upper())


def _is_marker(text: str) -> bool:
    return text.strip(_MARKER_DECORATION).upper() == NOT_FOUND_MARKER


def estimate_tokens(text: str) -> int:
    return len(text) // _CHARS_PER_TOKEN + 1


class Asker:
    """Chooses a question's sources with the search and the LLM; ``Answering`` then answers."""

    def __init__(self, model: ChatModel, search: Search, config: RagConfig,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._model = model
        self._search = search
        self._config = config
        self._clock = clock

    def prepare(self, request: AskRequest) -> "Answering":
        question = request.search.query.strip()
        if not question:
            raise RagError("the question is empty; ask something about the indexed sources")
        answering = Answering(self._model, question, self._clock)
        budget = self._budget(question, request.context_tokens)
        started = self._clock()
        queries = [question, *self._queries(question, answering)] if request.rewrite else [question]
        answering.timings["rewrite_ms"] = _ms(started, self._clock()) if request.rewrite else None
        started = self._clock()
        ranked = self._retrieve(request.search, queries, answering.warnings)
        answering.timings["retrieve_ms"] = _ms(started, self._clock())
        answering.queries = queries
        if request.filter and ranked:
            started = self._clock()
            ranked = self._relevant(question, ranked, answering)
            answering.timings["filter_ms"] = _ms(started, self._clock())
        answering.sources = fit([(part, score) for hit, score in ranked for part in by_section(hit)], budget)
        return answering

    def _budget(self, question: str, context_tokens: int | None) -> int:
        if context_tokens is not None:
            if context_tokens <= 0:
                raise RagError(f"--context-tokens must be positive, not {context_tokens}")
            return context_tokens
        window = self._config.llm.context_tokens
        rest = estimate_tokens(prompts.text(ASK_PROMPT)) + estimate_tokens(question) + ANSWER_TOKENS
        if window <= rest:
            raise RagError(f"llm.contextTokens {window} leaves no room for sources (the prompt, the question "
                           f"and the answer take about {rest}); set it to the model's context window")
        return window - rest

    def _queries(self, question: str, answering: "Answering") -> list[str]:
        """Up to three search queries the LLM writes for the question (searched after the question
        itself, and fused with it); none when it writes none."""
        request = prompts.text(REWRITE_PROMPT).replace("{question}", question)
        result = self._model.complete([ChatMessage("user", request)], max_tokens=100)
        answering.llm_calls += 1
        queries: list[str] = []
        for line in result.text.splitlines():
            query = _LIST_MARK.sub("", line).strip().strip("\"'`").strip()
            if query.endswith(":"):  # "Here are three queries:"
                continue
            if (query and len(query) <= _QUERY_MAX_CHARS
                    and query.lower() not in map(str.lower, [question, *queries])):
                queries.append(query)
        if not queries:
            answering.warnings.append("the LLM wrote no search queries; searched for the question itself")
        return queries[:MAX_QUERIES]

    def _retrieve(self, search: SearchRequest, queries: list[str],
                  warnings: list[str]) -> list[tuple[SearchHit, float]]:
        """Each query's hits, fused by reciprocal rank when there are several; best first."""
        responses = [self._search(dataclasses.replace(search, query=query)) for query in queries]
        for response in responses:
            warnings.extend(w for w in response.warnings if w not in warnings)
        if len(responses) == 1:
            return [(hit, hit.rerank if hit.rerank is not None else hit.score) for hit in responses[0].hits]
        k = self._config.search.rrf.k
        fused: dict[int, tuple[SearchHit, float]] = {}
        for response in responses:
            for rank, hit in enumerate(response.hits, 1):
                first_seen, score = fused.get(hit.chunk_id, (hit, 0.0))
                fused[hit.chunk_id] = (first_seen, score + 1.0 / (k + rank))
        best_first = sorted(fused.values(), key=lambda item: -item[1])
        return best_first[: search.top_k or self._config.search.final_top_k]

    def _relevant(self, question: str, ranked: list[tuple[SearchHit, float]],
                  answering: "Answering") -> list[tuple[SearchHit, float]]:
        """The chunks the LLM does not judge irrelevant (unclear or failed answers keep a chunk)."""
        template = prompts.text(FILTER_PROMPT).replace("{question}", question)
        conversations = [
            [ChatMessage("user",
                         template.replace("{location}", location(hit)).replace("{passage}", hit.content))]
            for hit, _ in ranked
        ]
        verdicts = complete_each(self._model, conversations, max_concurrency=self._config.llm.max_concurrency,
                                 max_tokens=3)
        answering.llm_calls += len(conversations)
        failures = [v for v in verdicts if isinstance(v, ProviderError)]
        if failures:
            answering.warnings.append(f"the relevance filter failed for {len(failures)} of {len(verdicts)} "
                                      f"chunks, which were kept: {first_line(failures[0])}")
        kept = [item for item, verdict in zip(ranked, verdicts, strict=True)
                if not _judged_irrelevant(verdict)]
        answering.filtered_out = len(ranked) - len(kept)
        return kept


def by_section(hit: SearchHit) -> list[SearchHit]:
    """A chunk of several merged sections as one source per section (its lines, its headerPath),
    so that an answer cites the section that says it; any other chunk as it is.

    Retrieval keeps the merged chunks (short sections alone rank worse: eval/README.md); only
    what the LLM is shown, and what a citation points at, is cut at the sections."""
    start = hit.coordinates.get("startLine")
    if not hit.sections or len(hit.sections) < 2 or not isinstance(start, int):
        return [hit]
    lines = hit.content.splitlines(keepends=True)
    parts = []
    for section in hit.sections:
        first, last = section.get("startLine"), section.get("endLine")
        if not isinstance(first, int) or not isinstance(last, int) or not first <= last:
            return [hit]
        text = "".join(lines[first - start:last - start + 1])
        if not text.strip():
            continue
        header_path = str(section.get("headerPath") or "")
        title = header_path.rsplit(" > ", 1)[-1].lstrip("#").strip()
        coordinates = {**hit.coordinates, "startLine": first, "endLine": last, "headerPath": header_path}
        if title and title != hit.title:
            coordinates["section"] = title
        parts.append(dataclasses.replace(hit, content=text, coordinates=coordinates, sections=None,
                                         header_paths=None))
    return parts or [hit]


def fit(ranked: Sequence[tuple[SearchHit, float]], budget: int) -> list["Source"]:
    """The best chunks, in order, as long as they fit in ``budget`` tokens.

    The first chunk that does not fit ends the list, so a lower-ranked one never displaces
    a better one; a first chunk bigger than the whole budget is cut to it.
    """
    sources: list[Source] = []
    used = 0
    for number, (hit, score) in enumerate(ranked, 1):
        text = hit.content
        cost = estimate_tokens(_block(number, location(hit), text))
        if used + cost > budget:
            if sources:
                break
            room = max(budget - estimate_tokens(_block(number, location(hit), "")), 0)
            text = text[: room * _CHARS_PER_TOKEN]
            cost = budget
        sources.append(Source(number, hit, score, text))
        used += cost
    return sources


class Answering:
    """A question with its sources chosen: ``stream()`` the answer, then ``output()`` tells all."""

    def __init__(self, model: ChatModel, question: str, clock: Callable[[], float]) -> None:
        self.question = question
        self.queries: list[str] = []
        self.sources: list[Source] = []
        self.filtered_out = 0
        self.llm_calls = 0
        self.warnings: list[str] = []
        self.timings: dict[str, float | None] = {"retrieve_ms": 0.0, "rewrite_ms": None, "filter_ms": None,
                                                 "first_token_ms": None, "answer_ms": 0.0}
        self._model = model
        self._clock = clock
        self._created = clock()
        self._answer: str | None = None
        self._marked = False  # the model wrote the not-found marker
        self._usage = ChatResult("", None, None)

    def messages(self) -> list[ChatMessage]:
        blocks = "\n\n".join(_block(s.number, s.location, s.text) for s in self.sources)
        return [ChatMessage("system", prompts.text(ASK_PROMPT).replace("{sources}", blocks)),
                ChatMessage("user", self.question)]

    def stream(self) -> Iterator[str]:
        """The answer's pieces as the model writes them; "not found", unasked, without sources.

        Pieces that may still be the start of the not-found marker are held back until they are
        not; a bare marker comes out as the not-found line in the question's language."""
        started = self._clock()
        if not self.sources:
            self._answer = not_found_line(self.question)
            yield self._answer
            return
        pieces = self._model.stream(self.messages(), max_tokens=ANSWER_TOKENS)
        self.llm_calls += 1
        written: list[str] = []
        held: str | None = ""
        try:
            for piece in pieces:
                if not written:
                    self.timings["first_token_ms"] = _ms(started, self._clock())
                written.append(piece)
                if held is not None:
                    held += piece
                    if _may_become_marker(held):
                        continue
                    piece, held = held, None
                yield piece
        finally:  # a reader that stops early (a client gone) stops the model too
            if isinstance(pieces, ChatStream):
                pieces.close()
        self.timings["answer_ms"] = _ms(started, self._clock())
        if isinstance(pieces, ChatStream):
            self._usage = ChatResult("", pieces.prompt_tokens, pieces.completion_tokens)
        answer = "".join(written).strip()
        self._marked = NOT_FOUND_MARKER in answer
        if held is not None:  # all of it could be the marker: it was, or nothing was written
            answer = not_found_line(self.question) if _is_marker(held) or not held.strip() else held.strip()
            yield answer
        elif self._marked:  # (a marker after some text: streamed as it came, stored without it)
            answer = answer.replace(NOT_FOUND_MARKER, "").strip() or not_found_line(self.question)
        self._answer = answer

    def answer(self) -> str:
        """The whole answer (streaming it first if nobody has)."""
        if self._answer is None:
            for _ in self.stream():
                pass
        assert self._answer is not None
        return self._answer

    def cited(self) -> set[int]:
        """The sources the answer cites; a source's header copied from the prompt is no citation
        (a small model may echo its prompt)."""
        answer = self.answer()
        for source in self.sources:
            answer = answer.replace(_header(source.number, source.location), "")
        return {int(n) for n in _CITED.findall(answer)} & {s.number for s in self.sources}

    def found(self) -> bool:
        """Whether the sources answered: the model cited one of them and did not write the
        not-found marker (whatever language it answered in)."""
        return bool(self.sources) and not self._marked_answer() and bool(self.cited())

    def _marked_answer(self) -> bool:
        self.answer()
        return self._marked

    def output(self) -> AskOutput:
        cited = self.cited()
        citations = [
            Citation(number=s.number, chunk_id=s.hit.chunk_id, source_name=s.hit.source_name, path=s.hit.path,
                     start_line=s.hit.coordinates.get("startLine"), end_line=s.hit.coordinates.get("endLine"),
                     location=s.location, url=s.hit.url, title=s.hit.title, score=s.score,
                     cited=s.number in cited)
            for s in self.sources
        ]
        timings = AskTimings(
            retrieve_ms=self.timings["retrieve_ms"] or 0.0, rewrite_ms=self.timings["rewrite_ms"],
            filter_ms=self.timings["filter_ms"], first_token_ms=self.timings["first_token_ms"],
            answer_ms=self.timings["answer_ms"] or 0.0, total_ms=_ms(self._created, self._clock()),
        )
        tokens = AskTokens(prompt=self._usage.prompt_tokens, completion=self._usage.completion_tokens,
                           context=sum(estimate_tokens(s.text) for s in self.sources))
        return AskOutput(question=self.question, answer=self.answer(), found=self.found(),
                         model=self._model.model_id, prompt=ASK_PROMPT, queries=self.queries,
                         citations=citations, filtered_out=self.filtered_out, llm_calls=self.llm_calls,
                         tokens=tokens, timings=timings, warnings=self.warnings)


def _header(number: int, where: str) -> str:
    return f"[{number}] {where}"


def _block(number: int, where: str, text: str) -> str:
    return f"{_header(number, where)}\n{text.strip()}"


def _judged_irrelevant(verdict: ChatResult | ProviderError) -> bool:
    return isinstance(verdict, ChatResult) and verdict.text.strip().lower().startswith("no")


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 1)
