"""The local embedding model's precision: fp32 as exported, or int8, and which of them ``auto`` takes.

Owns the int8 recipe and the measured check behind ``embeddings.local.precision: auto``.

int8 is ONNX Runtime's dynamic quantization of the exported fp32 file: every matrix
product with a weight gets int8 weights, one scale per output channel, and its input
quantized to uint8 per batch at run time. One scale per whole weight (the default)
bends the vectors too far (cosine 0.93 to fp32 on this repository's chunks, against
0.993 per channel). On a CPU with VNNI (AVX-512 or AVX) those products run about
twice as fast; on one without, an int8 MiniLM was measured 20% slower. So ``auto``
does not guess from the CPU's flags: it times both files on the same synthetic batch
(``measure``: interleaved, the fastest of five runs each), once per CPU, ONNX Runtime
version and recipe, and keeps the answer under ``$RAG_HOME/models/precision/``. int8 is
taken only when it needs at most ``AUTO_MARGIN`` of fp32's time.

int8 vectors are not fp32's: an int8 model has its own model id (``~int8``), so its
vectors never mix with fp32 ones (switching re-embeds; the other vectors stay aside).
"""

import contextlib
import hashlib
import logging
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import onnxruntime

log = logging.getLogger("rag.providers")

Precision = Literal["fp32", "int8"]
PRECISIONS = ("auto", "fp32", "int8")
INT8_RECIPE = "1"  # bump when ``quantize`` changes: stored int8 files and decisions are redone
# (and give its vectors a model id of their own: LocalEmbedder.model_id says "~int8" for recipe 1)
AUTO_MARGIN = 0.8  # auto takes int8 only if it needs at most this share of fp32's time
# The check's batch: as many texts as a default batch, of a typical chunk's length in tokens.
CHECK_BATCH, CHECK_TOKENS, CHECK_ROUNDS = 32, 128, 5


def quantize(fp32: Path | bytes) -> bytes:
    """The int8 model of an exported fp32 model (a file, or its bytes)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="rag-int8-") as folder:
        source = Path(folder) / "fp32.onnx"
        if isinstance(fp32, bytes):
            source.write_bytes(fp32)
        else:
            source = fp32
        target = Path(folder) / "int8.onnx"
        # (the exported graph declares no intermediate types; they are all float)
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        return target.read_bytes()


def cpu_key() -> str:
    """What a measured choice holds for: this CPU's model and flags, ONNX Runtime's version, the recipe."""
    import onnxruntime

    described = platform.machine() + platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("model name", "flags")):
                described += line
                if line.startswith("flags"):
                    break
    text = f"{described}\0{onnxruntime.__version__}\0{INT8_RECIPE}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _decision_file(model: str) -> Path:
    from rag.providers.model_export import models_dir

    name = hashlib.sha256(model.encode()).hexdigest()[:16]
    return models_dir() / "precision" / f"{name}-{cpu_key()}.txt"


def remembered(model: str) -> Precision | None:
    """The precision ``auto`` chose for ``model`` on this CPU before, if it did."""
    try:
        first = _decision_file(model).read_text(encoding="utf-8").split(maxsplit=1)[0]
    except (OSError, IndexError):
        return None
    return first if first in ("fp32", "int8") else None  # type: ignore[return-value]


def choose(model: str, fp32: Callable[[], "onnxruntime.InferenceSession"],
           int8: Callable[[], "onnxruntime.InferenceSession"], vocabulary: int) -> Precision:
    """``auto``'s choice for ``model``: remembered, or measured now (and remembered, best effort)."""
    known = remembered(model)
    if known is not None:
        return known
    fp32_seconds, int8_seconds = measure(fp32(), int8(), vocabulary)
    chosen: Precision = "int8" if int8_seconds <= AUTO_MARGIN * fp32_seconds else "fp32"
    log.info("local: precision auto: %s (a batch takes %.2f s in fp32, %.2f s in int8)",
             chosen, fp32_seconds, int8_seconds)
    from rag.providers.model_export import write_atomically

    record = f"{chosen} fp32 {fp32_seconds:.3f} s, int8 {int8_seconds:.3f} s, {time.strftime('%Y-%m-%d')}\n"
    with contextlib.suppress(OSError):  # a read-only home: measured again next time
        write_atomically(_decision_file(model), record.encode())
    return chosen


def measure(fp32: "onnxruntime.InferenceSession", int8: "onnxruntime.InferenceSession",
            vocabulary: int) -> tuple[float, float]:
    """The fastest of ``CHECK_ROUNDS`` timings of one synthetic batch on each session, timed in turn
    (fp32, int8, int8, fp32, …): other processes only ever add time, so the minimum is the
    least disturbed figure (a median of three moved by 20% between runs on a busy machine)."""
    import numpy as np

    shape = (CHECK_BATCH, CHECK_TOKENS)
    ids = np.random.default_rng(0).integers(1000, vocabulary, size=shape, dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    sessions = {"fp32": fp32, "int8": int8}
    seconds: dict[str, list[float]] = {"fp32": [], "int8": []}
    for session in sessions.values():
        session.run(None, feed)  # warm up
    for round_ in range(CHECK_ROUNDS):
        for name in ("fp32", "int8") if round_ % 2 == 0 else ("int8", "fp32"):
            started = time.perf_counter()
            sessions[name].run(None, feed)
            seconds[name].append(time.perf_counter() - started)
    return min(seconds["fp32"]), min(seconds["int8"])

