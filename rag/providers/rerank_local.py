"""Reranking on this machine with a cross-encoder, offline: ONNX Runtime first, CrossEncoder as fallback.

The model is a directory or a Hugging Face id already in the local cache, loaded
on first use. A one-label BERT/RoBERTa/XLM-R cross-encoder with safetensors weights
runs on ONNX Runtime (exported once, like the local embedder's model); any other
on sentence-transformers' CrossEncoder (imports torch), after a one-line note.
Documents longer than the model's maximum length are truncated by its tokenizer.
"""

import dataclasses
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rag.errors import ProviderError
from rag.providers.local import TORCH_HINT
from rag.providers.model_files import (
    UnsupportedModel,
    hub_offline,
    label_count,
    local_folder,
    read_cross_encoder,
    read_json,
)
from rag.providers.rerank_base import RerankResult, best_first

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

log = logging.getLogger("rag.providers")

LOCAL_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
_PROVIDER = "local reranker"


class _Scorer(Protocol):
    def score(self, query: str, documents: list[str]) -> list[float]: ...


class LocalReranker:
    """A cross-encoder on ``device``; ``max_length`` caps tokens per (query, document) pair."""

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
        self._loaded: _Scorer | None = None
        self._load_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"local:{self.model}"

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        if not documents or top_k <= 0:
            return []
        scorer = self._scorer()
        try:
            values = scorer.score(query, documents)
        except ProviderError:
            raise
        except Exception as exc:  # torch raises many kinds; search only handles ProviderError
            raise ProviderError(
                f"{_PROVIDER}: model '{self.model}' failed to score documents ({type(exc).__name__}: {exc})"
            ) from None
        return best_first(enumerate(values), top_k)

    def __repr__(self) -> str:
        return f"LocalReranker(model={self.model!r}, device={self._device!r})"

    def _scorer(self) -> _Scorer:
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Scorer:
        source = local_folder(self.model, _PROVIDER)
        problem = _not_a_cross_encoder(source)
        if problem:
            raise ProviderError(
                f"{_PROVIDER}: '{self.model}' is {problem}, so its scores would be meaningless; "
                f"use a cross-encoder such as {LOCAL_RERANK_MODEL} or BAAI/bge-reranker-base"
            )
        config = read_json(source / "config.json")
        labels = label_count(config) if isinstance(config, dict) else 1
        if labels != 1:
            raise ProviderError(
                f"{_PROVIDER}: '{self.model}' gives {labels} scores per pair (a classifier); "
                "a reranker needs a model with one relevance score"
            )
        reason = f"device '{self._device}' runs on sentence-transformers"
        if self._device == "cpu" and not self._trust_remote_code:
            try:
                return self._onnx(source)
            except UnsupportedModel as why:
                reason = f"'{self.model}' runs on sentence-transformers: {why}"
        log.warning("%s: %s", _PROVIDER, reason)
        return _CrossEncoderScorer(self._cross_encoder(source), self._batch_size)

    def _onnx(self, source: Path) -> _Scorer:
        from rag.providers.onnx_runtime import OnnxCrossEncoder

        spec = read_cross_encoder(source)
        if self._max_length is not None:
            window = min(self._max_length, spec.transformer.max_length)
            spec = dataclasses.replace(
                spec, transformer=dataclasses.replace(spec.transformer, max_length=window)
            )
        scorer = OnnxCrossEncoder(spec, self._batch_size)
        scorer.exported()
        return scorer

    def _cross_encoder(self, source: Path) -> "CrossEncoder":
        offline = hub_offline()
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ProviderError(
                f"{_PROVIDER}: '{self.model}' needs sentence-transformers, which is not "
                f"installed; {TORCH_HINT}"
            ) from None
        try:
            model: CrossEncoder = CrossEncoder(
                str(source),
                device=self._device,
                local_files_only=offline,
                max_length=self._max_length,
                trust_remote_code=self._trust_remote_code,
            )
        except Exception as exc:  # a directory holding something else, an unknown architecture…
            raise ProviderError(
                f"{_PROVIDER}: cannot load '{self.model}' as a cross-encoder ({type(exc).__name__}: {exc})"
            ) from None
        return model


class _CrossEncoderScorer:
    """The fallback: sentence-transformers' CrossEncoder (imports torch)."""

    def __init__(self, model: "CrossEncoder", batch_size: int = 32) -> None:
        self.model = model
        self._batch_size = batch_size

    def score(self, query: str, documents: list[str]) -> list[float]:
        scores = self.model.predict(
            [(query, document) for document in documents],
            batch_size=self._batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [float(score) for score in scores.tolist()]


def _not_a_cross_encoder(source: Path) -> str | None:
    """Why ``source`` cannot rerank, when its files say so; CrossEncoder would load it anyway,
    with a randomly initialised scoring head."""
    modules = read_json(source / "modules.json")
    if isinstance(modules, list) and any(
        isinstance(module, dict) and "Pooling" in str(module.get("type")) for module in modules
    ):
        return "an embedding model (a bi-encoder), not a cross-encoder"
    config = read_json(source / "config.json")
    if not isinstance(config, dict):
        return "not a model folder (no readable config.json)"
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures and not any("For" in a for a in architectures):
        return f"a base model ({', '.join(architectures)}) without a scoring head"
    return None
