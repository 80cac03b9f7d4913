"""The ``rag`` CLI with another "indexed text": context prepended to every chunk (an experiment).

Runs ``rag.cli.main`` after wrapping the chunker so that every chunk's content
starts with lines naming its context, for both the embedding model and BM25:

- ``path``: the file's path;
- ``context``: the path, then the fqn (code) or the headerPath (Markdown), when the chunk has one.

The prefix is also what search shows, which does not change a score: hits are
judged by path and line span or headerPath. Used by ``run_eval.py --variant``.

Usage: .venv/bin/python tests/eval/index_variant.py VARIANT [rag arguments...]
"""

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import rag.chunking.dispatcher as dispatcher
from rag.chunking.model import Chunk
from rag.cli import main as rag_main

VARIANTS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "path": lambda meta: [meta["path"]],
    "context": lambda meta: [meta["path"], *(str(meta[k]) for k in ("fqn", "headerPath") if meta.get(k))],
}


def prefixed(chunk: Chunk, variant: str) -> Chunk:
    return replace(chunk, content="\n".join([*VARIANTS[variant](chunk.metadata), chunk.content]))


def main() -> None:
    variant = sys.argv.pop(1)
    if variant not in VARIANTS:
        sys.exit(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    chunk_bytes = dispatcher.chunk_bytes

    def chunk_with_context(*args: Any, **kwargs: Any) -> dispatcher.FileChunks:
        chunked = chunk_bytes(*args, **kwargs)
        return replace(chunked, chunks=[prefixed(c, variant) for c in chunked.chunks])

    dispatcher.chunk_bytes = chunk_with_context  # type: ignore[assignment]
    rag_main()


if __name__ == "__main__":
    main()
