"""The Confluence client against hostile answers of a fake Confluence on 127.0.0.1 (both
flavors), from the third fault campaign (#56): credentials never leave the configured
origin (a ``_links.next`` naming another host or port is an error naming it, and a
recording transport shows every request of a whole run stays on the origin), and a
listing that loops (the same ``_links.next`` forever, a server ignoring ``start``) ends
in one line within a few requests."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from fake_confluence import FakeConfluence, sample_site

from rag.errors import SourceError
from rag.sources.confluence.client import ConfluenceClient

Answer = tuple[int, dict[str, str], bytes]


class Stranger:
    """Another HTTP server on 127.0.0.1 that records what reaches it."""

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []
        stranger = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stranger.authorizations.append(self.headers.get("Authorization"))
                body = json.dumps({"results": [], "_links": {}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(params=["cloud", "server"])
def site(request: pytest.FixtureRequest) -> Iterator[FakeConfluence]:
    fake = sample_site(request.param).start()
    yield fake
    fake.stop()


@pytest.fixture
def stranger() -> Iterator[Stranger]:
    made = Stranger()
    yield made
    made.stop()


LISTING_CAP = 200  # listing requests the fake answers at all: a client that loops fails, not hangs


def rewrite_listing(site: FakeConfluence, change: Any) -> None:
    """Answers of listing requests pass through ``change(data, target)`` first; after
    LISTING_CAP of them the fake answers 404."""
    original = site.answer

    def answer(method: str, target: str, headers: dict[str, str]) -> Answer:
        if len(listing_requests(site)) >= LISTING_CAP:
            return 404, {"Content-Type": "application/json"}, b'{"message": "the test stopped a loop"}'
        status, extra, body = original(method, target, headers)
        path = target.split("?")[0]
        if status == 200 and (path.endswith("/pages") or path.endswith("/rest/api/content")
                              or path.endswith("/content/search")):
            body = json.dumps(change(json.loads(body), target)).encode()
        return status, extra, body

    site.answer = answer  # type: ignore[method-assign]


def followed_by_links(site: FakeConfluence) -> str | None:
    """The selection whose listing follows ``_links.next``: Cloud's space listing, a CQL
    search on Server (its own listing counts ``start``)."""
    return 'label = "runbook"' if site.flavor == "server" else None


def listing_requests(site: FakeConfluence) -> list[str]:
    return [r for r in site.requests if r.split("?")[0].endswith(("/pages", "/rest/api/content", "/search"))]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_a_next_link_to_another_port_gets_no_credentials(
    site: FakeConfluence, stranger: Stranger, host: str
) -> None:
    def elsewhere(data: dict[str, Any], target: str) -> dict[str, Any]:
        data["_links"]["next"] = f"http://{host}:{stranger.port}/x?cursor=2"
        return data

    rewrite_listing(site, elsewhere)
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ())
    try:
        with pytest.raises(SourceError) as caught:
            list(api.pages(("ENG",), followed_by_links(site)))
    finally:
        api.close()
    message = str(caught.value)
    assert f"{host}:{stranger.port}" in message and "another host" in message and "\n" not in message
    assert stranger.authorizations == []


def test_a_next_link_to_another_scheme_or_a_scheme_relative_host_is_refused(site: FakeConfluence) -> None:
    port = site.base_url.split(":")[2].split("/")[0]
    for link in (f"https://127.0.0.1:{port}/wiki/x", "//example.invalid/wiki/x"):
        rewrite_listing(site, lambda data, target, link=link: {**data, "_links": {"next": link}})
        api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ(), timeout=5, sleep=lambda s: None)
        try:
            with pytest.raises(SourceError, match="another host"):
                list(api.pages(("ENG",), followed_by_links(site)))
        finally:
            api.close()


def test_an_absolute_next_link_on_the_same_origin_is_followed(site: FakeConfluence) -> None:
    origin = site.base_url.split(site.prefix)[0]

    def absolute(data: dict[str, Any], target: str) -> dict[str, Any]:
        following = data["_links"].get("next")
        if following and site.flavor == "cloud":
            data["_links"]["next"] = origin + following
        return data

    rewrite_listing(site, absolute)
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ())
    try:
        assert len(list(api.pages(("ENG",), None))) == 7
    finally:
        api.close()


class Recording(httpx.BaseTransport):
    """A real HTTP transport that notes every request's origin and Authorization."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.seen: list[tuple[str, bool]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((f"{request.url.scheme}://{request.url.netloc.decode()}",
                          "authorization" in request.headers))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_every_request_of_a_whole_listing_and_fetch_stays_on_the_origin(site: FakeConfluence) -> None:
    transport = Recording()
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ(), transport=transport)
    try:
        pages = list(api.pages(("ENG", "OPS"), None)) + list(api.pages(("ENG",), 'label = "runbook"'))
        for page in pages:
            if page.id != "104":  # (restricted)
                api.body(page)
            for attachment in api.attachments(page):
                api.download(page, attachment.download)
    finally:
        api.close()
    origin = site.base_url.split(site.prefix)[0]
    assert len(transport.seen) > 20
    assert {seen for seen, _ in transport.seen} == {origin}
    assert all(authorized for _, authorized in transport.seen)


def test_the_same_next_link_forever_ends_in_one_line(site: FakeConfluence) -> None:
    def same(data: dict[str, Any], target: str) -> dict[str, Any]:
        data["_links"]["next"] = f"{site.prefix}/rest/api/content/search?cql=x&cursor=2"
        return data

    rewrite_listing(site, same)
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ())
    try:
        with pytest.raises(SourceError) as caught:
            list(api.pages(("ENG",), followed_by_links(site)))
    finally:
        api.close()
    message = str(caught.value)
    assert "loops" in message and "\n" not in message
    assert len(listing_requests(site)) <= 3


def test_a_listing_that_ignores_start_or_the_cursor_ends_in_one_line(site: FakeConfluence) -> None:
    original = site._listed
    rewrite_listing(site, lambda data, target: data)
    site._listed = lambda pages, query: (original(pages, {})[0], 2)  # type: ignore[method-assign]
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ())
    try:
        with pytest.raises(SourceError) as caught:
            list(api.pages(("ENG",), None))
    finally:
        api.close()
    message = str(caught.value)
    assert "loops" in message and "lists nothing new" in message
    assert "\n" not in message and len(listing_requests(site)) <= 3


def test_a_listing_beyond_its_announced_total_ends(site: FakeConfluence) -> None:
    counter = iter(range(10_000, 10**9))
    first: list[dict[str, Any]] = []

    def endless(data: dict[str, Any], target: str) -> dict[str, Any]:
        first.extend(data["results"][:1 - len(first)])
        data["results"] = [{**first[0], "id": str(next(counter))}]
        data["totalSize"] = 3
        data["_links"]["next"] = f"/rest/api/content/search?cql=x&cursor={next(counter)}"
        return data

    rewrite_listing(site, endless)
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ())
    try:
        with pytest.raises(SourceError, match="more than the 103 results"):
            list(api.pages(("ENG",), 'label = "runbook"'))
    finally:
        api.close()
    assert len(listing_requests(site)) <= 110


def test_a_redirect_to_another_host_carries_no_credentials(site: FakeConfluence, stranger: Stranger) -> None:
    """(Cloud sends attachment downloads to a media host: redirects are followed, bare.)"""
    original = site.answer

    def redirect(method: str, target: str, headers: dict[str, str]) -> Answer:
        if "/download/" in target:
            return 302, {"Location": f"http://127.0.0.1:{stranger.port}/media/file.pdf"}, b""
        return original(method, target, headers)

    site.answer = redirect  # type: ignore[method-assign]
    api = ConfluenceClient(site.base_url, site.flavor, environ=site.environ())
    try:
        page = next(p for p in api.pages(("ENG",), None) if p.id == "102")
        [pdf, _] = api.attachments(page)
        api.download(page, pdf.download)
    finally:
        api.close()
    assert stranger.authorizations == [None]
