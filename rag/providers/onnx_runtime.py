"""Running a local model with ONNX Runtime and tokenizers: no torch at query or index time.

Owns the sessions, tokenization, pooling and normalization of the local embedder
(``OnnxEmbedding``) and the local reranker's scoring (``OnnxCrossEncoder``). The
ONNX file comes from ``rag.providers.model_export`` (exported once per model
content, kept under ``$RAG_HOME/models``); one that ONNX Runtime cannot load is
exported again, with a warning.

Precision (``rag.providers.precision``): the embedder runs the exported fp32 file, or its
int8 quantization kept beside it; ``auto`` is resolved, measured if it was never measured
on this CPU, on first use. The cross-encoder runs in fp32.

Threads: the embedder runs every call on one one-thread session, and document batches
as many at once as this process may use cores (``batches_at_once``, threads of
``LocalEmbedder.embed_documents`` calling the same session). On two cores that was as fast
as one batch on two intra-op threads when the machine was quiet and faster when it was
shared (intra-op threads wait for each other at every operator; a batch per core never
does); a single query neither waits for nor fights an index run's batch. The
cross-encoder scores its batches one after the other on one intra-op thread per core.
"""

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import ProviderError
from rag.providers.model_export import export, store, stored_path
from rag.providers.model_files import CrossEncoderModel, EmbeddingModel, TransformerModel
from rag.providers.precision import INT8_RECIPE, Precision, choose, quantize

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime
    from tokenizers import Encoding, Tokenizer

log = logging.getLogger("rag.providers")


def batch_threads() -> int:
    """Intra-op threads for document batches: every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class _OnnxModel:
    """One exported transformer: its files (fp32, int8), its tokenizer and its sessions, made on first use.

    ``precision`` "auto" is ``rag.providers.precision.choose``'s answer for ``name``, asked on first use.
    """

    def __init__(
        self, transformer: TransformerModel, source: Path, *, head: bool, stored: Path | None = None,
        precision: str = "fp32", name: str = "",
    ) -> None:
        self.transformer = transformer
        self._source = source
        self._head = head
        self._kind = "cross-encoder" if head else "embedding"
        self._files: dict[Precision, Path | bytes] = {}
        self._stored = stored  # a file exported earlier, from weights that are gone
        self._precision = precision
        self._name = name or str(source)
        self._sessions: dict[tuple[Precision, int], onnxruntime.InferenceSession] = {}
        self._lock = threading.RLock()
        self.tokenizer = self._tokenizer()

    @property
    def precision(self) -> Precision:
        """The precision the model runs in ("auto" resolved: measured now if never before on this CPU)."""
        with self._lock:
            if self._precision == "auto":
                threads = 1  # (the embedder's sessions: a batch per core, see above)
                self._precision = choose(
                    self._name,
                    lambda: self._session("fp32", threads),
                    lambda: self._session("int8", threads),
                    self.tokenizer.get_vocab_size(),
                )
            return "int8" if self._precision == "int8" else "fp32"

    def exported(self) -> Path | None:
        """Export (and quantize) the model if it is not stored yet; the stored file it runs, or None
        if only kept in memory."""
        with self._lock:
            file = self._file(self.precision)
            return file if isinstance(file, Path) else None

    def prepare(self, threads: int) -> Path | None:
        """``exported()``, then load the session on ``threads`` threads, so the first call finds
        everything ready."""
        self.session(threads)
        return self.exported()

    def session(self, threads: int) -> "onnxruntime.InferenceSession":
        with self._lock:
            return self._session(self.precision, threads)

    def _session(self, precision: Precision, threads: int) -> "onnxruntime.InferenceSession":
        with self._lock:
            if (precision, threads) not in self._sessions:
                self._sessions[precision, threads] = self._load(precision, threads)
            return self._sessions[precision, threads]

    def run(self, encodings: list["Encoding"], threads: int) -> "np.ndarray":
        import numpy as np

        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        try:
            output: np.ndarray = self.session(threads).run(None, feed)[0]
        except ProviderError:
            raise
        except Exception as exc:  # onnxruntime raises its own exception kinds
            raise ProviderError(
                f"local: ONNX Runtime failed on {self._source} ({type(exc).__name__}: {exc})"
            ) from None
        return output

    def _tokenizer(self) -> "Tokenizer":
        from tokenizers import Tokenizer

        path = self.transformer.folder / "tokenizer.json"
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception for a bad file
            raise ProviderError(f"local: cannot read {path} ({exc})") from None
        # Long inputs are cut to the model's window, as sentence-transformers does.
        tokenizer.enable_truncation(self.transformer.max_length, strategy="longest_first")
        pad_token = tokenizer.padding["pad_token"] if tokenizer.padding else None
        pad_id = tokenizer.token_to_id(pad_token) if pad_token else None
        pad_id = pad_id if pad_id is not None else int(self.transformer.config.get("pad_token_id") or 0)
        tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id) or "[PAD]")
        return tokenizer

    def _file(self, precision: Precision) -> Path | bytes:
        if precision not in self._files:
            self._files[precision] = self._obtain(precision)
        return self._files[precision]

    def _load(self, precision: Precision, threads: int) -> "onnxruntime.InferenceSession":
        import onnxruntime

        file = self._file(precision)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # ONNX Runtime's own warnings would clutter stderr
        try:
            return onnxruntime.InferenceSession(file, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged or half-copied file: InvalidProtobuf, Fail, …
            original = precision == "fp32" and self._stored is not None
            if not isinstance(file, Path) or original:  # nothing to export it from
                raise ProviderError(
                    f"local: ONNX Runtime cannot load the model exported from {self._source} ({exc})"
                ) from None
            log.warning(
                "local: %s is damaged (%s); exporting it again", file, str(exc).splitlines()[0][:200]
            )
            file.unlink(missing_ok=True)
            del self._files[precision]
            again = self._file(precision)
            return onnxruntime.InferenceSession(again, options, providers=["CPUExecutionProvider"])

    def _obtain(self, precision: Precision) -> Path | bytes:
        """The stored file for this model in ``precision``, exported (quantized) and stored first
        if absent (bytes if it cannot be)."""
        if precision == "int8":
            fp32 = self._file("fp32")
            name = f"{self._kind}-int8-r{INT8_RECIPE}.onnx"
            path = fp32.with_name(name) if isinstance(fp32, Path) else None
            if path is not None and path.is_file():
                return path
            data = quantize(fp32)
        else:
            if self._stored is not None:
                return self._stored
            path = stored_path(self._source, self._kind)
            if path.is_file():
                return path
            data = export(self.transformer, head=self._head)
        return path if path is not None and store(path, data) else data


class OnnxEmbedding:
    """A sentence-transformers embedding model run by ONNX Runtime; vectors normalized to length 1."""

    def __init__(
        self, model: EmbeddingModel, stored: Path | None = None, precision: str = "fp32", name: str = ""
    ) -> None:
        self.model = model
        self._onnx = _OnnxModel(model.transformer, model.source, head=False, stored=stored,
                                precision=precision, name=name)

    @property
    def dimensions(self) -> int:
        return self.model.dimensions

    @property
    def precision(self) -> Precision:
        return self._onnx.precision

    @property
    def batches_at_once(self) -> int:
        return batch_threads()

    def exported(self) -> Path | None:
        return self._onnx.exported()

    def prepare(self) -> Path | None:
        return self._onnx.prepare(1)

    def encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        import numpy as np

        prompt = self.model.prompt(query=query)
        # As sentence-transformers' Transformer module: stripped, prompt first, lower-cased if configured.
        inputs = [prompt + text.strip() for text in texts]
        if self.model.transformer.lower_case:
            inputs = [text.lower() for text in inputs]
        encodings = self._onnx.tokenizer.encode_batch(inputs)
        hidden = self._onnx.run(encodings, 1)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)[:, :, None]
        pooled = self._pool(hidden, mask)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors: list[list[float]] = (pooled / np.maximum(norms, 1e-12)).tolist()
        return vectors

    def _pool(self, hidden: "np.ndarray", mask: "np.ndarray") -> "np.ndarray":
        import numpy as np

        mode = self.model.pooling
        if mode == "cls":
            return hidden[:, 0]
        if mode == "max":
            pooled: np.ndarray = np.where(mask > 0, hidden, -1e9).max(axis=1)
            return pooled
        counts = np.maximum(mask.sum(axis=1), 1e-9)
        pooled = (hidden * mask).sum(axis=1) / (np.sqrt(counts) if mode == "mean_sqrt_len" else counts)
        return pooled


class OnnxCrossEncoder:
    """A one-label cross-encoder run by ONNX Runtime: a relevance score per (query, document)."""

    def __init__(self, model: CrossEncoderModel, batch_size: int) -> None:
        self.model = model
        self._batch_size = batch_size
        self._onnx = _OnnxModel(model.transformer, model.source, head=True)

    def exported(self) -> Path | None:
        return self._onnx.exported()

    def prepare(self) -> Path | None:
        return self._onnx.prepare(batch_threads())

    def score(self, query: str, documents: list[str]) -> list[float]:
        import numpy as np

        scores: list[float] = []
        for start in range(0, len(documents), self._batch_size):
            pairs = [(query, document) for document in documents[start : start + self._batch_size]]
            logits = self._onnx.run(self._onnx.tokenizer.encode_batch(pairs), batch_threads())[:, 0]
            if self.model.sigmoid:
                logits = 1.0 / (1.0 + np.exp(-logits))
            scores.extend(float(value) for value in logits)
        return scores
