"""A small Confluence REST client: list a selection's pages with their versions, fetch one body.

Two flavors, told by the base URL (``*.atlassian.net`` is Cloud) unless given:

- Cloud (``https://SITE.atlassian.net/wiki``): REST v2 — ``/api/v2/spaces?keys=…``,
  ``/api/v2/spaces/{id}/pages`` (cursor pagination through ``_links.next``),
  ``/api/v2/pages/{id}?body-format=storage``; a page's read restrictions from v1's
  ``/rest/api/content/{id}/restriction/byOperation/read``.
- Server / Data Center: REST v1 — ``/rest/api/content?spaceKey=…&start=…&limit=…`` and
  ``/rest/api/content/{id}?expand=body.storage,version,ancestors,…`` (restrictions expanded too).

A CQL selection goes through v1's ``/rest/api/content/search`` on both (v2 has no CQL).

Credentials come from the environment only: Cloud ``CONFLUENCE_EMAIL`` + ``CONFLUENCE_API_TOKEN``
(Basic), Server/DC ``CONFLUENCE_TOKEN``, a personal access token (Bearer); none set: anonymous.
They live in the HTTP client's headers alone, go only to the base URL's origin (a link of an
answer that names another host or port is the source's error, never followed) and are
scrubbed from every message.
A listing is followed while it adds pages: a ``_links.next`` already followed, an answer that
lists nothing new (a server ignoring ``start``) or more results than the listing announced
end it with one SourceError naming the loop (``_Listing``).
Every request goes through ``rag.providers._http.Retrying``: 429 and 503 honour ``Retry-After``,
other 5xx and network errors back off, all within ``timeout`` seconds per request.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from rag.errors import FileGoneError, FileUnreadableError, ProviderError, SourceError
from rag.providers._http import Retrying, RetryPolicy, _server_message, attempt_timeout
from rag.secrets import scrub

CLOUD, SERVER = "cloud", "server"
EMAIL_ENV, API_TOKEN_ENV, TOKEN_ENV = "CONFLUENCE_EMAIL", "CONFLUENCE_API_TOKEN", "CONFLUENCE_TOKEN"
PAGE_LIMIT = 100  # listing page size (Cloud allows 250, Server often caps at 100)
# The most results one listing may give when its answers announce no total (v1's totalSize):
# far beyond a real space, and each request must add new ones, so a loop ends within it.
MAX_LISTED = 200_000
_SERVER_RESTRICTIONS = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"


def flavor_of(base_url: str, flavor: str | None = None) -> str:
    """``cloud`` or ``server``: as given, else Cloud for an ``*.atlassian.net`` host."""
    if flavor is not None:
        if flavor not in (CLOUD, SERVER):
            raise SourceError(f"flavor {flavor!r}: use cloud or server")
        return flavor
    host = urlsplit(base_url).hostname or ""
    return CLOUD if host == "atlassian.net" or host.endswith(".atlassian.net") else SERVER


@dataclass(frozen=True)
class PageRef:
    """A page as a listing shows it: enough to decide whether its body must be fetched."""

    id: str
    title: str
    space: str  # key
    version: int
    modified: str  # ISO 8601, the version's time
    parent_id: str | None = None
    ancestors: tuple[str, ...] = ()  # titles, outermost first (Server; Cloud: from the listing's parents)
    space_name: str = ""
    webui: str = ""
    author: str = ""


@dataclass(frozen=True)
class PageBody:
    storage: str  # the body in storage format (XHTML)
    version: int
    modified: str
    author: str
    webui: str
    restrictions: dict[str, list[str]] = field(default_factory=dict)  # {"users": [...], "groups": [...]}


@dataclass(frozen=True)
class Attachment:
    title: str  # the file name
    media_type: str
    size: int
    version: int
    modified: str
    download: str  # a link relative to the base URL


class ConfluenceClient:
    """GET requests to one Confluence site, retried within a deadline; counts body requests."""

    def __init__(
        self,
        base_url: str,
        flavor: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError(f"Confluence base URL {base_url!r} is not an http(s) URL; "
                              "use https://SITE.atlassian.net/wiki or your server's address")
        self._origin, self._base_path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        self.flavor = flavor_of(self.base_url, flavor)
        environ = dict(os.environ) if environ is None else environ
        headers, self._secrets, self._auth_advice = _auth(self.flavor, environ)
        self._client = httpx.Client(headers={"Accept": "application/json", **headers}, transport=transport,
                                    follow_redirects=True)
        self._retrying = Retrying("confluence", RetryPolicy(deadline=timeout), self._scrub, sleep=sleep)
        self.body_requests = 0  # bodies and attachments asked for (on several threads: under _counting)
        self._counting = threading.Lock()
        self._space_names: dict[str, str] = {}

    def close(self) -> None:
        self._client.close()

    # -- listing -----------------------------------------------------------------

    def pages(self, spaces: tuple[str, ...], cql: str | None) -> Iterator[PageRef]:
        """The current pages of the selection: every page of ``spaces``, or those ``cql``
        finds (within ``spaces`` when both are given)."""
        if cql:
            scope = f"space in ({','.join(_cql_quote(s) for s in spaces)}) AND " if spaces else ""
            query = f"{scope}type = page AND ({cql})"
            yield from self._v1_pages("/rest/api/content/search", {"cql": query})
        elif self.flavor == CLOUD:
            for space in self._cloud_spaces(spaces):
                yield from self._cloud_pages(space)
        else:
            for key in spaces:
                yield from self._v1_pages("/rest/api/content", {"spaceKey": key, "type": "page"},
                                          space=key)

    def _cloud_spaces(self, keys: tuple[str, ...]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for data in self._follow("/api/v2/spaces", {"keys": ",".join(keys), "limit": PAGE_LIMIT}):
            found.extend(data.get("results", []))
        missing = sorted(set(keys) - {s.get("key") for s in found})
        if missing:
            raise SourceError(f"Confluence space {', '.join(missing)} not found at {self.base_url} "
                              f"(or {self._auth_advice} may not see it); check the space key")
        for space in found:
            self._space_names[space["key"]] = space.get("name") or space["key"]
        return sorted(found, key=lambda s: keys.index(s["key"]))

    def _cloud_pages(self, space: dict[str, Any]) -> Iterator[PageRef]:
        path = f"/api/v2/spaces/{space['id']}/pages"
        for data in self._follow(path, {"status": "current", "limit": PAGE_LIMIT}):
            for page in data.get("results", []):
                version = page.get("version") or {}
                yield PageRef(
                    id=str(page["id"]), title=page.get("title") or "", space=space["key"],
                    version=int(version.get("number", 0)), modified=version.get("createdAt", ""),
                    parent_id=str(page["parentId"]) if page.get("parentId") else None,
                    space_name=self._space_names.get(space["key"], space["key"]),
                    webui=(page.get("_links") or {}).get("webui", ""), author=version.get("authorId", ""))

    def _v1_pages(self, path: str, params: dict[str, Any], space: str | None = None) -> Iterator[PageRef]:
        """v1 content: Server's listing by start/limit, a CQL search by its ``_links.next``."""
        params = {**params, "status": "current", "expand": "version,ancestors,space", "limit": PAGE_LIMIT}
        if space is not None:  # Server's own listing: start/limit
            start = 0
            listing = _Listing(f"of space {space}")
            while True:
                url = self._absolute(path)
                data = self._get(path, {**params, "start": start})
                self._check(listing.problem(data, f"{url}?start={start}"), None)
                results = data.get("results", [])
                yield from (self._v1_page(page) for page in results)
                more = "next" in (data.get("_links") or {})
                if not results or len(results) < int(data.get("limit") or PAGE_LIMIT) or not more:
                    return
                start += len(results)
        for data in self._follow(path, params):
            yield from (self._v1_page(page) for page in data.get("results", []))

    def _v1_page(self, page: dict[str, Any]) -> PageRef:
        version = page.get("version") or {}
        space = page.get("space") or {}
        ancestors = tuple(a.get("title", "") for a in page.get("ancestors") or [] if a.get("title"))
        parents = page.get("ancestors") or []
        return PageRef(
            id=str(page["id"]), title=page.get("title") or "", space=space.get("key", ""),
            version=int(version.get("number", 0)), modified=version.get("when", ""),
            parent_id=str(parents[-1]["id"]) if parents else None, ancestors=ancestors,
            space_name=space.get("name") or space.get("key", ""),
            webui=(page.get("_links") or {}).get("webui", ""), author=_v1_author(version.get("by")))

    # -- one page ------------------------------------------------------------------

    def body(self, page: PageRef) -> PageBody:
        """The page's body and read restrictions; FileUnreadableError when this page alone
        cannot be read (restricted, gone since the listing, a server error)."""
        with self._counting:
            self.body_requests += 1
        if self.flavor == CLOUD:
            data = self._page_get(page, f"/api/v2/pages/{page.id}", {"body-format": "storage"})
            version = data.get("version") or {}
            restricted = f"/rest/api/content/{page.id}/restriction/byOperation/read"
            restrictions = self._page_get(page, restricted, {})
            return PageBody(storage=_storage(data), version=int(version.get("number", page.version)),
                            modified=version.get("createdAt", page.modified),
                            author=version.get("authorId", page.author),
                            webui=(data.get("_links") or {}).get("webui", page.webui),
                            restrictions=_restrictions(restrictions.get("restrictions")))
        data = self._page_get(page, f"/rest/api/content/{page.id}",
                              {"expand": f"body.storage,version,ancestors,space,{_SERVER_RESTRICTIONS}"})
        version = data.get("version") or {}
        read = ((data.get("restrictions") or {}).get("read") or {}).get("restrictions")
        return PageBody(storage=_storage(data), version=int(version.get("number", page.version)),
                        modified=version.get("when", page.modified), author=_v1_author(version.get("by")),
                        webui=(data.get("_links") or {}).get("webui", page.webui),
                        restrictions=_restrictions(read))

    def attachments(self, page: PageRef) -> list[Attachment]:
        """The page's attachments (FileUnreadableError as ``body``)."""
        params: dict[str, Any] = {"limit": PAGE_LIMIT}
        if self.flavor == CLOUD:
            path, read = f"/api/v2/pages/{page.id}/attachments", _cloud_attachment
        else:
            path, read = f"/rest/api/content/{page.id}/child/attachment", _server_attachment
            params["expand"] = "version"
        return [read(a) for data in self._follow(path, params, page) for a in data.get("results", [])]

    def download(self, page: PageRef, link: str) -> bytes:
        """An attachment's bytes (FileUnreadableError as ``body``)."""
        with self._counting:
            self.body_requests += 1
        return self._send(self._absolute(link), {}, page).content

    # -- requests ------------------------------------------------------------------

    def _follow(
        self, path: str, params: dict[str, Any], page: PageRef | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every page of a paginated answer, following ``_links.next`` (cursors on Cloud)."""
        url: str | None = self._absolute(path)
        listing = _Listing(path if page is None else f"of page {page.id}'s attachments")
        first = True
        while url is not None:
            data = self._decode(self._send(url, params if first else {}, page), url)
            self._check(listing.problem(data, url), page)
            first = False
            yield data
            following = (data.get("_links") or {}).get("next")
            url = self._absolute(following) if following else None

    def _check(self, problem: str | None, page: PageRef | None) -> None:
        """Raises a listing's loop (``_Listing.problem``) as the source's error (a page's own for
        a page's attachments)."""
        if problem is None:
            return
        message = f"Confluence at {self.base_url}: {problem}; stopped there (nothing is removed)"
        if page is not None:
            raise FileUnreadableError(message)
        raise SourceError(message)

    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        url = self._absolute(path)
        return self._decode(self._send(url, params, None), url)

    def _page_get(self, page: PageRef, path: str, params: dict[str, Any]) -> dict[str, Any]:
        url = self._absolute(path)
        return self._decode(self._send(url, params, page), url, page)

    def _send(self, url: str, params: dict[str, Any], page: PageRef | None) -> httpx.Response:
        """The successful answer to a GET; a failure is the page's own when ``page`` is given
        (FileUnreadableError), else the source's (SourceError); 401 is always the source's."""
        query = params or None  # (an empty mapping would drop the query of a _links.next URL)
        try:
            response = self._retrying.send(
                url, lambda left: self._client.get(url, params=query, timeout=attempt_timeout(left)))
        except ProviderError as exc:
            if page is None:
                raise SourceError(str(exc)) from None
            raise FileUnreadableError(f"page {page.id}: {exc}") from None
        if response.is_success:
            return response
        status = response.status_code
        if status == 401 or (status == 403 and page is None):
            raise SourceError(f"Confluence at {self.base_url} refused the request (HTTP {status}); "
                              f"set {self._auth_advice}")
        message = self._scrub(_server_message(response))[:300]
        if page is not None:
            if status in (403, 404):  # no longer this token's to read: its old text must not stay
                why = "restricted: the token may not read it" if status == 403 else "gone since the listing"
                raise FileGoneError(f"page {page.id} ({page.title}): {why}")
            raise FileUnreadableError(f"page {page.id} ({page.title}): HTTP {status}: {message}")
        raise SourceError(f"Confluence at {self.base_url}: {url} failed (HTTP {status}): {message}; "
                          "check the base URL, the flavor (cloud or server) and the space keys")

    def _decode(self, response: httpx.Response, url: str, page: PageRef | None = None) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            return data
        problem = f"{url} answered with something that is not a JSON object"
        if page is not None:
            raise FileUnreadableError(f"page {page.id}: {problem}")
        raise SourceError(f"Confluence: {problem}; check that the base URL points at Confluence "
                          "(Cloud: https://SITE.atlassian.net/wiki)")

    def _absolute(self, link: str) -> str:
        """A link of an answer as a URL: Cloud's ``_links.next`` may start with the base path
        (``/wiki/api/v2/…``) or not (``/rest/api/…``). An absolute link must stay on the base
        URL's origin (scheme, host and port): the credentials go nowhere else."""
        parts = urlsplit(link)
        if parts.netloc:  # absolute, or scheme-relative (//host/…)
            link = link if parts.scheme else f"{urlsplit(self._origin).scheme}:{link}"
            if _origin(link) != _origin(self._origin):
                raise SourceError(
                    f"Confluence at {self.base_url}: an answer links to another host ({parts.netloc}); "
                    f"its credentials go only to {self._origin}, so the link is not followed; check the "
                    "base URL (the address Confluence calls itself, its Base URL setting)")
            return link
        if self._base_path and link.startswith(self._base_path + "/"):
            return self._origin + link
        return self.base_url + (link if link.startswith("/") else "/" + link)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)


class _Listing:
    """What one paginated listing has given so far, to tell a loop from progress: the URLs
    followed, the results' ids, and the total its answers announced."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.urls: set[str] = set()
        self.ids: set[str] = set()
        self.requests = 0
        self.bound = MAX_LISTED

    def problem(self, data: dict[str, Any], url: str) -> str | None:
        """Why the listing must stop at this answer to ``url``, or None while it adds results."""
        self.requests += 1
        if url in self.urls:
            return f"the listing {self.what} loops: {url} was already followed ({self.requests} requests)"
        self.urls.add(url)
        total = data.get("totalSize")
        if isinstance(total, int) and total >= 0:  # (pages added meanwhile: a tenth more)
            self.bound = min(self.bound, total + max(PAGE_LIMIT, total // 10))
        results = [r for r in data.get("results") or [] if isinstance(r, dict)]
        keys = {str(r.get("id", r.get("title", ""))) for r in results}
        if results and keys <= self.ids:
            return (f"the listing {self.what} loops: the answer to {url} lists nothing new "
                    f"(the server may ignore start or the cursor; {self.requests} requests)")
        self.ids |= keys
        if len(self.ids) > self.bound:
            return (f"the listing {self.what} gives more than the {self.bound:,} results it may "
                    f"({self.requests} requests)")
        return None


def _origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of ``url``, the port made explicit."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def _auth(flavor: str, environ: dict[str, str]) -> tuple[dict[str, str], list[str], str]:
    """(headers, the secrets to scrub, the variables to name on 401/403)."""
    if flavor == CLOUD:
        advice = f"{EMAIL_ENV} and {API_TOKEN_ENV} (an Atlassian API token)"
        email, token = environ.get(EMAIL_ENV, ""), environ.get(API_TOKEN_ENV, "")
        if not (email and token):
            return {}, [], advice
        basic = base64.b64encode(f"{email}:{token}".encode()).decode()
        return {"Authorization": f"Basic {basic}"}, [token, basic], advice
    advice = f"{TOKEN_ENV} (a personal access token)"
    token = environ.get(TOKEN_ENV, "")
    return ({"Authorization": f"Bearer {token}"} if token else {}), [token] if token else [], advice


def _storage(data: dict[str, Any]) -> str:
    body = ((data.get("body") or {}).get("storage") or {}).get("value")
    return body if isinstance(body, str) else ""


def _restrictions(read: dict[str, Any] | None) -> dict[str, list[str]]:
    """Users and groups a page's own read restriction lets in (empty: not restricted)."""
    read = read or {}
    users = [u.get("accountId") or u.get("username") or u.get("userKey") or u.get("displayName", "")
             for u in (read.get("user") or {}).get("results", [])]
    groups = [g.get("name", "") for g in (read.get("group") or {}).get("results", [])]
    named = (("users", users), ("groups", groups))
    return {key: sorted(v for v in values if v) for key, values in named if values}


def _cloud_attachment(found: dict[str, Any]) -> Attachment:
    version = found.get("version") or {}
    return Attachment(found.get("title", ""), found.get("mediaType", ""), int(found.get("fileSize") or 0),
                      int(version.get("number", 0)), version.get("createdAt", ""),
                      found.get("downloadLink") or (found.get("_links") or {}).get("download", ""))


def _server_attachment(found: dict[str, Any]) -> Attachment:
    version = found.get("version") or {}
    return Attachment(found.get("title", ""), (found.get("metadata") or {}).get("mediaType", ""),
                      int((found.get("extensions") or {}).get("fileSize") or 0),
                      int(version.get("number", 0)), version.get("when", ""),
                      (found.get("_links") or {}).get("download", ""))


def _v1_author(by: dict[str, Any] | None) -> str:
    by = by or {}
    return str(by.get("username") or by.get("accountId") or by.get("displayName") or "")


def _cql_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
