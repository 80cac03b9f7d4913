"""A Hugging Face hub on 127.0.0.1 serving model folders, for the download path of the local providers.

It answers the few endpoints ``huggingface_hub.snapshot_download`` uses, in their
documented shapes: the revision info (``/api/models/{repo}/revision/{rev}``), the
file tree (``/api/models/{repo}/tree/{rev}``) and the files themselves
(``/{repo}/resolve/{rev}/{path}``, HEAD for metadata, GET for bytes). Every request
path is recorded so a test can tell which files were fetched.
"""

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self, repos: dict[str, Path]) -> None:
        self.repos = repos  # repo id -> folder served as its files
        self.requests: list[str] = []

    def files(self, repo: str) -> dict[str, Path]:
        folder = self.repos[repo]
        return {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*")) if p.is_file()}


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            path = unquote(urlparse(self.path).path)
            hub.requests.append(f"{self.command} {path}")
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
                repo = "/".join(parts[2:4])
                if repo not in hub.repos:
                    return self._send(404, b'{"error": "Repository not found"}', body,
                                      {"X-Error-Code": "RepoNotFound"})
                files = hub.files(repo)
                if parts[4] == "revision":
                    info = {"id": repo, "sha": COMMIT, "siblings": [{"rfilename": name} for name in files]}
                else:
                    info = [{"type": "file", "oid": hashlib.sha1(p.read_bytes()).hexdigest(),
                             "size": p.stat().st_size, "path": name} for name, p in files.items()]
                return self._send(200, json.dumps(info).encode(), body, {"Content-Type": "application/json"})
            if len(parts) >= 5 and parts[2] == "resolve":
                repo, name = "/".join(parts[:2]), "/".join(parts[4:])
                file = hub.files(repo).get(name) if repo in hub.repos else None
                if file is None:
                    return self._send(404, b"", body, {"X-Error-Code": "EntryNotFound"})
                data = file.read_bytes()
                return self._send(200, data, body, {
                    "X-Repo-Commit": COMMIT,
                    "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                    "Content-Type": "application/octet-stream",
                })
            self._send(404, b"", body, {})

        def _send(self, status: int, data: bytes, body: bool, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

    return Handler


@contextmanager
def serve(hub: FakeHub) -> Iterator[str]:
    """Serve ``hub`` on a free port of 127.0.0.1; yields its endpoint URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
