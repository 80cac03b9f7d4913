"""Reranking on this machine with a sentence-transformers CrossEncoder, offline.

The model is a directory or a Hugging Face id already in the local cache, loaded
on first use (importing torch takes seconds). Documents longer than the model's
maximum length are truncated by its tokenizer.
"""

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import ProviderError
from rag.providers.local import hub_offline, model_source
from rag.providers.rerank_base import RerankResult, best_first

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

LOCAL_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
_PROVIDER = "local reranker"


class LocalReranker:
    """A CrossEncoder on ``device``; ``max_length`` caps tokens per (query, document) pair."""

    def __init__(
        self,
        model: str = LOCAL_RERANK_MODEL,
        device: str = "cpu",
        batch_size: int = 32,
        *,
        max_length: int | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        if batch_size <= 0:
            raise ProviderError(f"{_PROVIDER}: batch size must be positive, not {batch_size}")
        if max_length is not None and max_length <= 0:
            raise ProviderError(f"{_PROVIDER}: max length must be positive, not {max_length}")
        self.model = model
        self._device = device
        self._batch_size = batch_size
        self._max_length = max_length
        self._trust_remote_code = trust_remote_code
        self._loaded: CrossEncoder | None = None
        self._load_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"local:{self.model}"

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        if not documents or top_k <= 0:
            return []
        model = self._model()
        try:
            scores = model.predict(
                [(query, document) for document in documents],
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
            values = [float(score) for score in scores.tolist()]
        except Exception as exc:  # torch raises many kinds; search only handles ProviderError
            raise ProviderError(
                f"{_PROVIDER}: model '{self.model}' failed to score documents ({type(exc).__name__}: {exc})"
            ) from None
        return best_first(enumerate(values), top_k)

    def __repr__(self) -> str:
        return f"LocalReranker(model={self.model!r}, device={self._device!r})"

    def _model(self) -> "CrossEncoder":
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> "CrossEncoder":
        source = model_source(self.model, _PROVIDER)
        offline = hub_offline()
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ProviderError(
                f"{_PROVIDER}: sentence-transformers is not installed; pip install sentence-transformers"
            ) from None
        problem = _not_a_cross_encoder(source)
        if problem:
            raise ProviderError(
                f"{_PROVIDER}: '{self.model}' is {problem}, so its scores would be meaningless; "
                f"use a cross-encoder such as {LOCAL_RERANK_MODEL} or BAAI/bge-reranker-base"
            )
        try:
            model: CrossEncoder = CrossEncoder(
                source,
                device=self._device,
                local_files_only=offline,
                max_length=self._max_length,
                trust_remote_code=self._trust_remote_code,
            )
        except OSError as exc:
            raise ProviderError(
                f"{_PROVIDER}: model '{self.model}' is not available offline ({exc}). Use a path to a "
                f"cross-encoder model directory, or download it once with network access: "
                f"hf download {self.model}"
            ) from None
        except Exception as exc:  # a directory holding something else, an unknown architecture…
            raise ProviderError(
                f"{_PROVIDER}: cannot load '{self.model}' as a cross-encoder ({type(exc).__name__}: {exc})"
            ) from None
        if model.num_labels != 1:
            raise ProviderError(
                f"{_PROVIDER}: '{self.model}' gives {model.num_labels} scores per pair (a classifier); "
                "a reranker needs a model with one relevance score"
            )
        return model


def _not_a_cross_encoder(source: str) -> str | None:
    """Why ``source`` cannot rerank, when its files say so; CrossEncoder would load it anyway,
    with a randomly initialised scoring head."""
    modules = _read_json(source, "modules.json")
    if isinstance(modules, list) and any(
        isinstance(module, dict) and "Pooling" in str(module.get("type")) for module in modules
    ):
        return "an embedding model (a bi-encoder), not a cross-encoder"
    config = _read_json(source, "config.json")
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if isinstance(architectures, list) and architectures and not any("For" in a for a in architectures):
        return f"a base model ({', '.join(architectures)}) without a scoring head"
    return None


def _read_json(source: str, name: str) -> object:
    """A JSON file of a model directory, or of a Hugging Face id in the local cache; None if absent."""
    directory = Path(source)
    if directory.is_dir():
        path: Path | None = directory / name
    else:
        from huggingface_hub import try_to_load_from_cache

        try:
            found = try_to_load_from_cache(source, name)
        except ValueError:  # not a valid repository id; loading will say so
            found = None
        path = Path(found) if isinstance(found, str) else None
    if path is None or not path.is_file():
        return None
    try:
        result: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return result
