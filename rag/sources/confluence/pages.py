"""A Confluence selection as an index run reads it (``rag.sources.base.Documents``).

A page is a file whose path is ``SPACE/<page id>-<title>`` (the title made path-safe), whose
size is its version number and whose mtime is its version's time: the listing alone tells
the run's SQL plan which pages are new, changed or gone (deleted, archived, moved out of the
selected spaces), and only the bodies of new and changed pages are fetched. The text stored
and chunked is the page's Markdown under a ``# Title`` line, so every chunk's headerPath
starts with the title; its context adds the breadcrumb ``space › ancestors › page``. Each
chunk carries pageId, space, title, version, author, lastModified and url; the file row
keeps them too, with the page's ancestors and read restrictions (users and groups).

With ``attachments``, a page's PDF and .docx attachments are files under the page's path
(``SPACE/<id>-<title>/<file name>``), sized by their version, chunked as any such file.

A page obeys ``indexing.maxFileSize`` as a file does (``max_bytes``): one whose Markdown is larger,
or whose body is larger than ``STORAGE_PER_TEXT`` times it (not even converted), is that page's
error. Bodies are fetched ahead of the run's reads, ``FETCHERS`` at a time and at most ``AHEAD``
pages ahead: a remote round trip is what a page costs, not its conversion.
"""

from __future__ import annotations

import datetime
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.config import ChunkSettings, ConfluencePages, SourceSpec
from rag.errors import ChunkingError, FileUnreadableError
from rag.sources.confluence.client import Attachment, ConfluenceClient, PageBody, PageRef
from rag.sources.confluence.storage import Links, storage_to_markdown
from rag.sources.scan import ScannedFile, ScanResult

if TYPE_CHECKING:
    from rag.dispatcher import FileChunks

BREADCRUMB_SEPARATOR = " › "
ATTACHMENT_EXTENSIONS = (".pdf", ".docx")
_UNSAFE = re.compile(r"[^\w.-]+")
FETCHERS = 4  # body requests at once
AHEAD = 32  # pages fetched ahead of the one read
_TITLE_CHARS = 80
STORAGE_PER_TEXT = 4  # XHTML's markup: a body may be this much larger than its Markdown


def page_path(page: PageRef) -> str:
    """``SPACE/<page id>-<title>``, the title's runs of other than letters, digits, ``.``,
    ``_`` and ``-`` made one ``-``."""
    slug = _UNSAFE.sub("-", page.title).strip("-.")[:_TITLE_CHARS].rstrip("-.")
    return f"{page.space}/{page.id}-{slug}" if slug else f"{page.space}/{page.id}"


def page_markdown(title: str, body: PageBody, links: Links | None = None) -> str:
    """The text stored for a page: its title as the top header, then its body as Markdown
    (``links``: where its links to pages and attachments lead)."""
    return f"# {title}\n\n{storage_to_markdown(body.storage, links)}"


@dataclass
class _Listed:
    page: PageRef
    breadcrumb: str
    ancestors: list[str]
    attachment: Attachment | None = None


class ConfluenceDocuments:
    """The pages (and, with ``attachments``, their PDF/.docx files) of one Confluence source."""

    def __init__(self, spec: SourceSpec, client: ConfluenceClient, max_bytes: int = 1_000_000) -> None:
        self.spec, self.client, self.max_bytes = spec, client, max_bytes
        self.selection = spec.pages or ConfluencePages()
        self._listed: dict[str, _Listed] = {}
        self._bodies: dict[str, PageBody] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._order: list[ScannedFile] = []  # what prefetch was told, the next to submit first
        self._fetches: dict[str, Future[PageBody | bytes]] = {}
        self._page_urls: dict[tuple[str, str], str] | None = None  # made at the first read after a scan

    def close(self) -> None:
        """Stops fetching ahead and closes the client."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self.client.close()

    def scan(self, paths: list[str] | None) -> ScanResult:
        """The selection's current pages; ``paths`` is ignored (a listing is the whole selection)."""
        pages = list(self.client.pages(self.selection.spaces, self.selection.cql))
        self._page_urls = None
        by_id = {p.id: p for p in pages}
        files = []
        for page in pages:
            path = page_path(page)
            ancestors = list(page.ancestors) or _parent_titles(page, by_id)
            crumb = BREADCRUMB_SEPARATOR.join([page.space_name or page.space, *ancestors, page.title])
            self._listed[path] = _Listed(page, crumb, ancestors)
            files.append(ScannedFile(path, Path(), page.version, _nanoseconds(page.modified),
                                     tuple(ancestors)))
            if self.selection.attachments:
                files.extend(self._attachments(path, page, crumb, ancestors))
        files.sort(key=lambda f: f.path)
        return ScanResult(files=files)

    def _attachments(self, path: str, page: PageRef, crumb: str, ancestors: list[str]) -> list[ScannedFile]:
        try:
            found = self.client.attachments(page)
        except FileUnreadableError:
            return []  # the page's own body request says why
        files = []
        for attachment in found:
            if not attachment.title.lower().endswith(ATTACHMENT_EXTENSIONS):
                continue
            file_path = f"{path}/{_UNSAFE.sub('-', attachment.title).strip('-')}"
            self._listed[file_path] = _Listed(page, crumb, ancestors, attachment)
            modified = _nanoseconds(attachment.modified)
            files.append(ScannedFile(file_path, Path(), attachment.version, modified))
        return files

    def prefetch(self, files: list[ScannedFile]) -> None:
        self._order = files[::-1]
        if files and self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=FETCHERS, thread_name_prefix="rag-confluence")
        self._fetch_ahead()

    def _fetch_ahead(self) -> None:
        while self._order and len(self._fetches) < AHEAD:
            path = self._order.pop().path
            assert self._pool is not None
            self._fetches[path] = self._pool.submit(self._fetch, path)

    def _fetch(self, path: str) -> PageBody | bytes:
        listed = self._listed[path]
        if listed.attachment is not None:
            return self.client.download(listed.page, listed.attachment.download)
        return self.client.body(listed.page)

    def read(self, file: ScannedFile) -> bytes:
        fetch = self._fetches.pop(file.path, None)
        self._fetch_ahead()
        fetched = fetch.result() if fetch is not None else self._fetch(file.path)
        if isinstance(fetched, bytes):
            return fetched
        listed, body = self._listed[file.path], fetched
        self._check_size(listed.page, len(body.storage), STORAGE_PER_TEXT, "body")
        try:
            text = page_markdown(listed.page.title, body, self._links(listed.page))
        except ChunkingError as exc:
            raise FileUnreadableError(f"page {listed.page.id} ({listed.page.title}): {exc}") from None
        except Exception as exc:  # (RecursionError, MemoryError's kin…): this page's error, not the run's
            raise FileUnreadableError(f"page {listed.page.id} ({listed.page.title}): its body could not be "
                                      f"converted ({type(exc).__name__})") from None
        data = text.encode("utf-8")
        self._check_size(listed.page, len(data), 1, "text")
        self._bodies[file.path] = body
        return data

    def _check_size(self, page: PageRef, size: int, factor: int, what: str) -> None:
        if size > self.max_bytes * factor:
            raise FileUnreadableError(
                f"page {page.id} ({page.title}): its {what} is {size / 2**20:,.1f} MB, over "
                f"{'' if factor == 1 else f'{factor} × '}indexing.maxFileSize ({self.max_bytes:,} bytes); "
                "raise it to index the page")

    def reread(self, file: ScannedFile, text: str, metadata: dict[str, Any]) -> bytes:
        """A page that only moved: its stored Markdown, with the fields its body gave when it was
        fetched (version, author, restrictions); the listing gives its new place."""
        page = self._listed[file.path].page
        self._bodies[file.path] = PageBody(
            "", int(metadata.get("version") or page.version),
            str(metadata.get("lastModified") or page.modified), str(metadata.get("author") or page.author),
            page.webui, metadata.get("restrictions") or {})
        return text.encode("utf-8")

    def _links(self, page: PageRef) -> Links:
        """Where the links of ``page`` lead: listed pages to their web addresses."""
        if self._page_urls is None:
            base = self.client.base_url
            self._page_urls = {(listed.page.space, listed.page.title): base + listed.page.webui
                               for listed in self._listed.values() if listed.page.webui}
        return Links(self.client.base_url, page.space, page.id, self._page_urls)

    def chunk(self, data: bytes, file: ScannedFile, settings: ChunkSettings) -> FileChunks:
        from rag.chunking.markdown import chunk_markdown
        from rag.chunking.model import Chunk
        from rag.dispatcher import FileChunks, chunk_bytes

        listed = self._listed[file.path]
        body = self._bodies.pop(file.path, None)
        fields = self._fields(listed, body)
        if listed.attachment is not None:
            chunked = chunk_bytes(data, file.path, max_tokens=settings.max_tokens, overlap=settings.overlap)
            fields["attachment"] = listed.attachment.title
        else:
            text = data.decode("utf-8")
            try:
                chunked = FileChunks(text, chunk_markdown(text, file.path, max_tokens=settings.max_tokens,
                                                          overlap=settings.overlap))
            except Exception as exc:  # one page never ends the run
                chunked = FileChunks("", [], error=f"page {listed.page.id} could not be chunked "
                                                   f"({type(exc).__name__}: {str(exc)[:200]})")
        restrictions = body.restrictions if body is not None else {}
        return replace(chunked,
                       chunks=[Chunk(c.content, {**c.metadata, **fields, "breadcrumb": listed.breadcrumb})
                               for c in chunked.chunks],
                       metadata={**fields, "ancestors": listed.ancestors, "restrictions": restrictions})

    def _fields(self, listed: _Listed, body: PageBody | None) -> dict[str, Any]:
        page = listed.page
        return {
            "pageId": page.id, "space": page.space, "title": page.title,
            "version": body.version if body is not None else page.version,
            "author": body.author if body is not None else page.author,
            "lastModified": body.modified if body is not None else page.modified,
            "url": self.client.base_url + (body.webui if body is not None else page.webui),
        }


def _parent_titles(page: PageRef, by_id: dict[str, PageRef]) -> list[str]:
    """Cloud's listing names a page's parent only: its ancestors' titles, outermost first, as far
    as the listing holds them."""
    titles: list[str] = []
    seen = {page.id}
    parent = page.parent_id
    while parent is not None and parent in by_id and parent not in seen:
        seen.add(parent)
        titles.append(by_id[parent].title)
        parent = by_id[parent].parent_id
    return titles[::-1]


def _nanoseconds(iso_time: str) -> int:
    """An ISO 8601 time as nanoseconds since the epoch (0 when missing or unreadable)."""
    try:
        when = datetime.datetime.fromisoformat(iso_time.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000
