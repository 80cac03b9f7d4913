"""What the evaluation-set builders share: where sets live, fetching a pinned sdist, npm tarball or Debian package,
writing cases.

A set lives in ``.bench/eval/<name>/`` (gitignored): ``copy/`` is the folder
that gets indexed, ``cases.jsonl`` the queries with their answers in the
format of ``rag/evaluation.py``.
"""

import argparse
import hashlib
import io
import json
import random
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVAL_HOME = ROOT / ".bench" / "eval"
SEED = 20240601  # fixed: the same queries are drawn on every machine


def set_dir(name: str) -> Path:
    return EVAL_HOME / name


def fetch_sdist(project: str, version: str) -> Path:
    """The unpacked source distribution of ``project==version`` (downloaded with pip once)."""
    downloads = EVAL_HOME / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archives = _archives(downloads, project, version)
    if not archives:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             f"{project}=={version}", "-d", str(downloads)],
            check=True,
        )
        archives = _archives(downloads, project, version)
    with tarfile.open(archives[0]) as tar:
        top = tar.getnames()[0].split("/")[0]
        tree = downloads / top
        if not tree.exists():
            tar.extractall(downloads, filter="data")
    return tree


def fetch_npm(package: str, version: str) -> Path:
    """The unpacked npm tarball of ``package@version`` (downloaded with ``npm pack`` once)."""
    downloads = EVAL_HOME / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / f"{package.lstrip('@').replace('/', '-')}-{version}.tgz"
    if not archive.exists():
        subprocess.run(["npm", "pack", "--silent", f"{package}@{version}", "--pack-destination", str(downloads)],
                       check=True, stdout=subprocess.DEVNULL)
    tree = downloads / f"npm-{archive.name.removesuffix('.tgz')}"
    if not tree.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
    return tree / "package"


def fetch_pinned(url: str, sha256: str) -> Path:
    """The file at ``url``, downloaded once into the downloads folder and checked against ``sha256``."""
    downloads = EVAL_HOME / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / url.rsplit("/", 1)[-1]
    if not target.exists():
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{url}: sha256 differs from the pinned {sha256}")
        target.write_bytes(data)
    return target


def fetch_debian(url: str, sha256: str) -> Path:
    """The unpacked tree of a pinned Debian download: a binary package (``.deb``, its data
    archive) or a source package's ``.orig.tar.*``."""
    archive = fetch_pinned(url, sha256)
    tree = archive.parent / f"debian-{archive.name}"
    if not tree.exists():
        if archive.suffix == ".deb":
            data = io.BytesIO(deb_member(archive.read_bytes(), "data.tar"))
            with tarfile.open(fileobj=data) as tar:
                tar.extractall(tree, filter="data")
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(tree, filter="data")
    return tree


def fetch_deb_data(url: str, sha256: str) -> bytes:
    """The data.tar member of a Debian package (fetched once from ``url``, pinned by ``sha256``)."""
    return deb_member(fetch_pinned(url, sha256).read_bytes(), "data.tar")


def deb_member(archive: bytes, prefix: str) -> bytes:
    """The first member of an ar archive (a .deb) whose name starts with ``prefix``."""
    offset = 8  # "!<arch>\n"
    while offset < len(archive):
        header = archive[offset:offset + 60]
        name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58].decode().strip())
        if name.startswith(prefix):
            return archive[offset + 60:offset + 60 + size]
        offset += 60 + size + size % 2
    raise SystemExit(f"no {prefix}* member in the package")


def _archives(folder: Path, project: str, version: str) -> list[Path]:
    normalized = project.replace("-", "_").lower()
    return [p for p in folder.glob("*.tar.gz") if p.name.lower() in
            (f"{normalized}-{version}.tar.gz", f"{project.lower()}-{version}.tar.gz")]


def fresh_copy(name: str) -> Path:
    """An empty ``copy/`` folder for set ``name`` (an older one is removed)."""
    copy = set_dir(name) / "copy"
    if copy.exists():
        shutil.rmtree(copy)
    copy.mkdir(parents=True)
    return copy


def drop_repeated_queries(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cases whose query text no other case has (a repeated query has no single answer)."""
    counts: dict[str, int] = {}
    for case in cases:
        key = case["query"].lower()
        counts[key] = counts.get(key, 0) + 1
    return [c for c in cases if counts[c["query"].lower()] == 1]


def write_cases(name: str, cases: Sequence[dict[str, Any]], limit: int, header: str) -> Path:
    """A fixed random sample of at most ``limit`` cases, sorted by id, as ``cases.jsonl``."""
    chosen = list(cases) if len(cases) <= limit else random.Random(SEED).sample(list(cases), limit)
    path = set_dir(name) / "cases.jsonl"
    lines = [f"# {header}"] + [json.dumps(c, ensure_ascii=False) for c in sorted(chosen, key=lambda c: c["id"])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{name}: {len(chosen)} of {len(cases)} candidate queries -> {path}", file=sys.stderr)
    return path


def write_copy(copy: Path, relative: str, text: str) -> None:
    """Writes ``text`` to ``copy/relative``, folders included."""
    target = copy / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def builder_main(description: str, build: Callable[[int], Path]) -> None:
    """The command line of a set builder: ``[--max-queries N]``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--max-queries", type=int, default=300)
    build(parser.parse_args().max_queries)
