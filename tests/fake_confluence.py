"""A fake Confluence: a real HTTP server on 127.0.0.1 answering the documented shapes of
Cloud's REST v2 (and the v1 calls Cloud still serves) or Server/DC's REST v1.

Its content is plain data (spaces, pages, attachments) the tests change between runs. It
counts body requests, can answer the next requests with a status (429 with ``Retry-After``,
503, 500) and checks credentials (Cloud: Basic e-mail:token, Server: Bearer token) with 401.
Used by tests/sources/test_sources_confluence*.py and bench/bench_confluence.py.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

EMAIL, API_TOKEN, PAT = "dev@example.com", "cloud-secret-token-123", "server-secret-pat-456"


@dataclass
class Attachment:
    filename: str
    media_type: str
    data: bytes
    version: int = 1


@dataclass
class Page:
    id: str
    title: str
    space: str
    body: str
    parent: str | None = None
    version: int = 1
    modified: str = "2026-11-01T10:00:00.000Z"
    author: str = "alice"
    labels: tuple[str, ...] = ()
    restricted: bool = False  # the body answers 403 (listed, but the token may not read it)
    read_users: tuple[str, ...] = ()
    read_groups: tuple[str, ...] = ()
    attachments: list[Attachment] = field(default_factory=list)

    def edit(self, body: str, when: str = "2026-11-20T09:30:00.000Z") -> None:
        self.body, self.version, self.modified = body, self.version + 1, when


@dataclass
class Space:
    key: str
    id: str
    name: str


class FakeConfluence:
    """The server and its data; ``base_url`` is what a source is configured with."""

    def __init__(self, flavor: str = "cloud", *, page_size: int = 2) -> None:
        self.flavor = flavor
        self.page_size = page_size
        self.spaces: dict[str, Space] = {}
        self.pages: dict[str, Page] = {}
        self.body_requests = 0
        self.requests: list[str] = []
        self.failures: list[tuple[int, dict[str, str]]] = []  # answered to the next requests, in order
        self.require_auth = True
        self.echo_authorization = False  # failures repeat the request's Authorization header
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None  # made by start()
        self.prefix = "/wiki" if flavor == "cloud" else "/confluence"

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.prefix}"

    def start(self) -> FakeConfluence:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def environ(self) -> dict[str, str]:
        """The credentials the server accepts, as the environment gives them."""
        if self.flavor == "cloud":
            return {"CONFLUENCE_EMAIL": EMAIL, "CONFLUENCE_API_TOKEN": API_TOKEN}
        return {"CONFLUENCE_TOKEN": PAT}

    def add_space(self, key: str, name: str) -> None:
        self.spaces[key] = Space(key, str(9000 + len(self.spaces)), name)

    def add(self, page: Page) -> Page:
        self.pages[page.id] = page
        return page

    # -- answering -------------------------------------------------------------

    def answer(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        url = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self._lock:
            self.requests.append(target)
            if self.failures:
                status, extra = self.failures.pop(0)
                echo = f" for Authorization: {headers.get('authorization')}" if self.echo_authorization else ""
                return _json(status, {"message": f"fake failure {status}{echo}"}, extra)
        if self.require_auth and headers.get("authorization") != self._expected_auth():
            return _json(401, {"message": "Basic authentication with passwords is deprecated"})
        if method != "GET" or not url.path.startswith(self.prefix + "/"):
            return _json(404, {"message": "no such endpoint"})
        path = url.path[len(self.prefix):]
        routes = _CLOUD_ROUTES if self.flavor == "cloud" else _SERVER_ROUTES
        for pattern, name in [*routes, *_COMMON_ROUTES]:
            match = re.fullmatch(pattern, path)
            if match:
                result: tuple[int, dict[str, str], bytes] = getattr(self, name)(*match.groups(), query=query)
                return result
        return _json(404, {"message": f"no such endpoint {path}"})

    def _expected_auth(self) -> str:
        if self.flavor == "cloud":
            return "Basic " + base64.b64encode(f"{EMAIL}:{API_TOKEN}".encode()).decode()
        return f"Bearer {PAT}"

    def _page_or_error(self, page_id: str, *, body: bool) -> Page | tuple[int, dict[str, str], bytes]:
        page = self.pages.get(page_id)
        if page is None:
            return _json(404, {"message": f"No content found with id: {page_id}"})
        if body:
            with self._lock:
                self.body_requests += 1
            if page.restricted:
                return _json(403, {"message": "You do not have permission to view this page"})
        return page

    def _listed(self, pages: list[Page], query: dict[str, str]) -> tuple[list[Page], int]:
        start = int(query.get("start") or query.get("cursor") or 0)
        limit = min(int(query.get("limit") or 25), self.page_size)
        return pages[start:start + limit], start + limit

    def _in_space(self, key: str) -> list[Page]:
        return sorted((p for p in self.pages.values() if p.space == key), key=lambda p: int(p.id))

    def _ancestors(self, page: Page) -> list[Page]:
        chain = []
        parent = page.parent
        while parent is not None and parent in self.pages:
            chain.append(self.pages[parent])
            parent = self.pages[parent].parent
        return chain[::-1]

    # Cloud v2 ----------------------------------------------------------------------

    def cloud_spaces(self, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        keys = query.get("keys", "").split(",")
        found = [{"id": s.id, "key": s.key, "name": s.name, "type": "global", "status": "current"}
                 for s in self.spaces.values() if s.key in keys]
        return _json(200, {"results": found, "_links": {"base": self.base_url}})

    def cloud_space_pages(self, space_id: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        space = next((s for s in self.spaces.values() if s.id == space_id), None)
        if space is None:
            return _json(404, {"message": "space not found"})
        pages = self._in_space(space.key)
        shown, following = self._listed(pages, query)
        links: dict[str, str] = {"base": self.base_url}
        if following < len(pages):
            links["next"] = f"{self.prefix}/api/v2/spaces/{space_id}/pages?cursor={following}&limit={self.page_size}"
        return _json(200, {"results": [self._cloud_page(p) for p in shown], "_links": links})

    def _cloud_page(self, page: Page, body: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": page.id, "status": "current", "title": page.title, "spaceId": self.spaces[page.space].id,
            "parentId": page.parent, "parentType": "page" if page.parent else None, "authorId": page.author,
            "createdAt": "2026-01-01T00:00:00.000Z",
            "version": {"number": page.version, "message": "", "minorEdit": False, "authorId": page.author,
                        "createdAt": page.modified},
            "_links": {"webui": f"/spaces/{page.space}/pages/{page.id}/{quote(page.title.replace(' ', '+'), safe='+')}",
                       "tinyui": f"/x/{page.id}"},
        }
        if body:
            data["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        return data

    def cloud_page(self, page_id: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        found = self._page_or_error(page_id, body=True)
        if not isinstance(found, Page):
            return found
        return _json(200, self._cloud_page(found, body=query.get("body-format") == "storage"))

    def cloud_attachments(self, page_id: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        page = self.pages.get(page_id)
        if page is None:
            return _json(404, {"message": "not found"})
        results = [{"id": f"att{page.id}{i}", "title": a.filename, "mediaType": a.media_type,
                    "fileSize": len(a.data), "version": {"number": a.version, "createdAt": page.modified},
                    "downloadLink": f"/download/attachments/{page.id}/{quote(a.filename)}?version={a.version}"}
                   for i, a in enumerate(page.attachments)]
        return _json(200, {"results": results, "_links": {}})

    # Server v1 ----------------------------------------------------------------------

    def server_content(self, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        key = query.get("spaceKey", "")
        if key not in self.spaces:
            return _json(404, {"message": f"No space with key : {key}"})
        pages = self._in_space(key)
        shown, following = self._listed(pages, query)
        return _json(200, self._v1_listing(shown, query, following < len(pages),
                                           f"/rest/api/content?spaceKey={key}&start={following}"))

    def _v1_listing(self, shown: list[Page], query: dict[str, str], more: bool, next_link: str) -> dict[str, Any]:
        links = {"base": self.base_url, "context": self.prefix}
        if more:
            links["next"] = f"{next_link}&limit={self.page_size}"
        return {"results": [self._v1_page(p) for p in shown], "start": int(query.get("start") or 0),
                "limit": min(int(query.get("limit") or 25), self.page_size), "size": len(shown), "_links": links}

    def _v1_page(self, page: Page, body: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": page.id, "type": "page", "status": "current", "title": page.title,
            "space": {"key": page.space, "name": self.spaces[page.space].name},
            "version": {"number": page.version, "when": page.modified,
                        "by": {"type": "known", "username": page.author, "displayName": page.author.title()}},
            "ancestors": [{"id": a.id, "type": "page", "title": a.title} for a in self._ancestors(page)],
            "_links": {"webui": f"/display/{page.space}/{quote(page.title.replace(' ', '+'), safe='+')}"},
        }
        if body:
            data["body"] = {"storage": {"value": page.body, "representation": "storage"}}
            data["restrictions"] = {"read": {"operation": "read", "restrictions": self._restrictions(page)}}
        return data

    def server_page(self, page_id: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        found = self._page_or_error(page_id, body=True)
        if not isinstance(found, Page):
            return found
        return _json(200, self._v1_page(found, body="body.storage" in query.get("expand", "")))

    def server_attachments(self, page_id: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        page = self.pages.get(page_id)
        if page is None:
            return _json(404, {"message": "not found"})
        results = [{"id": f"att{page.id}{i}", "type": "attachment", "title": a.filename,
                    "metadata": {"mediaType": a.media_type}, "extensions": {"fileSize": len(a.data)},
                    "version": {"number": a.version, "when": page.modified},
                    "_links": {"download": f"/download/attachments/{page.id}/{quote(a.filename)}?version={a.version}"}}
                   for i, a in enumerate(page.attachments)]
        return _json(200, {"results": results, "start": 0, "limit": 50, "size": len(results), "_links": {}})

    # Both ---------------------------------------------------------------------------

    def restrictions(self, page_id: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        found = self._page_or_error(page_id, body=False)
        if not isinstance(found, Page):
            return found
        return _json(200, {"operation": "read", "restrictions": self._restrictions(found)})

    def _restrictions(self, page: Page) -> dict[str, Any]:
        return {"user": {"results": [{"type": "known", "accountId": u, "username": u} for u in page.read_users],
                         "size": len(page.read_users)},
                "group": {"results": [{"type": "group", "name": g} for g in page.read_groups],
                          "size": len(page.read_groups)}}

    def search(self, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """CQL as the client writes it: ``space in ("A","B") AND type = page AND (label = "x")``."""
        cql = query.get("cql", "")
        spaces = re.search(r'space in \(([^)]*)\)', cql)
        keys = re.findall(r'"([^"]+)"', spaces.group(1)) if spaces else list(self.spaces)
        label = re.search(r'label = "([^"]+)"', cql)
        pages = [p for key in keys for p in self._in_space(key) if label is None or label.group(1) in p.labels]
        shown, following = self._listed(pages, query)
        listing = self._v1_listing(shown, query, following < len(pages),
                                   f"/rest/api/content/search?cql={quote(cql)}&cursor={following}")
        return _json(200, listing)

    def download(self, page_id: str, filename: str, *, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        page = self.pages.get(page_id)
        attachment = next((a for a in page.attachments if quote(a.filename) == filename), None) if page else None
        if attachment is None:
            return _json(404, {"message": "not found"})
        with self._lock:
            self.body_requests += 1
        return 200, {"Content-Type": attachment.media_type}, attachment.data


_CLOUD_ROUTES = [
    (r"/api/v2/spaces", "cloud_spaces"),
    (r"/api/v2/spaces/(\d+)/pages", "cloud_space_pages"),
    (r"/api/v2/pages/(\d+)", "cloud_page"),
    (r"/api/v2/pages/(\d+)/attachments", "cloud_attachments"),
]
_SERVER_ROUTES = [
    (r"/rest/api/content", "server_content"),
    (r"/rest/api/content/(\d+)", "server_page"),
    (r"/rest/api/content/(\d+)/child/attachment", "server_attachments"),
]
_COMMON_ROUTES = [
    (r"/rest/api/content/(\d+)/restriction/byOperation/read", "restrictions"),
    (r"/rest/api/content/search", "search"),
    (r"/download/attachments/(\d+)/([^/]+)", "download"),
]


def _json(status: int, data: Any, extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json", **(extra or {})}, json.dumps(data).encode()


def _handler(fake: FakeConfluence) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed ACK

        def do_GET(self) -> None:
            status, headers, body = fake.answer("GET", self.path, {k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


DEPLOY_BODY = """<h1>Overview</h1>
<p>Deploy the <strong>billing</strong> service with <code>make deploy</code>.<br/>Ask #ops first.</p>
<ac:structured-macro ac:name="toc" ac:schema-version="1"><ac:parameter ac:name="maxLevel">2</ac:parameter></ac:structured-macro>
<ac:structured-macro ac:name="info" ac:schema-version="1"><ac:parameter ac:name="title">Before you start</ac:parameter>
<ac:rich-text-body><p>Read the <ac:link><ri:page ri:content-title="On-call rules"/></ac:link> first.</p></ac:rich-text-body></ac:structured-macro>
<h2>Steps</h2>
<ol><li>Build the image</li><li>Roll out<ul><li>canary first</li><li>then everyone</li></ul></li></ol>
<ac:structured-macro ac:name="code" ac:schema-version="1"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:parameter ac:name="title">Roll out</ac:parameter><ac:plain-text-body><![CDATA[kubectl apply -f billing.yaml
kubectl rollout status deploy/billing && echo "<done>"]]></ac:plain-text-body></ac:structured-macro>
<ac:structured-macro ac:name="noformat" ac:schema-version="1"><ac:plain-text-body><![CDATA[billing-7d9f  Running  0  2m]]></ac:plain-text-body></ac:structured-macro>
<h2>Environments</h2>
<table><colgroup><col/><col/></colgroup><tbody>
<tr><th><p>Environment</p></th><th><p>URL</p></th><th><p>Owner</p></th></tr>
<tr><td><p>staging</p></td><td><p><a href="https://staging.example.com">staging | web</a></p></td><td><p>team-a</p></td></tr>
<tr><td><p>production</p></td><td><p><a href="https://billing.example.com">billing.example.com</a></p></td><td><p><ac:link><ri:user ri:account-id="557058:abc"/></ac:link></p></td></tr>
</tbody></table>
<ac:structured-macro ac:name="warning" ac:schema-version="1"><ac:rich-text-body><p>Never deploy on a <em>Friday</em>.</p></ac:rich-text-body></ac:structured-macro>
<ac:structured-macro ac:name="note" ac:schema-version="1"><ac:rich-text-body><p>Rollbacks take five minutes.</p></ac:rich-text-body></ac:structured-macro>
<p><ac:image ac:height="250"><ri:attachment ri:filename="architecture.png"/></ac:image></p>
<p>The full checklist: <ac:link><ri:attachment ri:filename="checklist.pdf"/><ac:plain-text-link-body><![CDATA[deploy checklist]]></ac:plain-text-link-body></ac:link>.</p>
<ac:structured-macro ac:name="jira" ac:schema-version="1"><ac:parameter ac:name="jqlQuery">project = BILL</ac:parameter></ac:structured-macro>
<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete</ac:task-status><ac:task-body>Tag the release</ac:task-body></ac:task>
<ac:task><ac:task-id>2</ac:task-id><ac:task-status>incomplete</ac:task-status><ac:task-body>Tell support</ac:task-body></ac:task></ac:task-list>
"""


def sample_site(flavor: str) -> FakeConfluence:
    """Two spaces, nested pages, more than three listing pages of ENG (two pages a page), a
    page with tables, code macros, panels and attachments, and a restricted page."""
    fake = FakeConfluence(flavor, page_size=2)
    fake.add_space("ENG", "Engineering")
    fake.add_space("OPS", "Operations")
    fake.add(Page("100", "Engineering home", "ENG", "<p>Welcome to the engineering space.</p>"))
    fake.add(Page("101", "Runbooks", "ENG", "<p>How we run things.</p>", parent="100"))
    fake.add(Page("102", "Deploy the billing service", "ENG", DEPLOY_BODY, parent="101", labels=("runbook",),
                  read_users=("alice",), read_groups=("billing-team",),
                  attachments=[Attachment("checklist.pdf", "application/pdf", b"%PDF-1.4 not a real pdf"),
                               Attachment("architecture.png", "image/png", b"\x89PNG")]))
    fake.add(Page("103", "On-call rules", "ENG", "<h2>Paging</h2><p>Page the <em>primary</em> first; "
                  "escalate after 15 minutes.</p>", parent="101", labels=("runbook",)))
    fake.add(Page("104", "Salary bands", "ENG", "<p>Confidential.</p>", parent="100", restricted=True))
    fake.add(Page("105", "Coding style", "ENG", "<p>We format Python with <code>ruff format</code>.</p>",
                  parent="100"))
    fake.add(Page("106", "Старый релиз", "ENG", "<p>Релиз идёт по вторникам.</p>", parent="100"))
    fake.add(Page("200", "Incident guide", "OPS", "<h1>Severity</h1><ul><li>SEV1: all hands</li>"
                  "<li>SEV2: on-call</li></ul>"))
    fake.add(Page("201", "Postmortems", "OPS", "<p>Write one within <strong>five</strong> days.</p>",
                  parent="200"))
    return fake
