"""Embedding throughput of the local model (`make bench-embed`): variants side by side on the same texts.

Texts: the indexed texts (context + content) of this repository's chunks, as an index run
embeds them, deduplicated; a fixed random sample of ``--texts N`` (default 600) is timed.
Variants, each an ONNX file and a session setting, are timed in turn, interleaved
(A B C A B C …, ``--rounds`` rounds, default 3), each on all the sample's texts sorted by
length and cut into batches, exactly as ``LocalEmbedder.embed_documents`` does; the
figures are medians of the rounds with their spread (min–max) and the ratio to fp32.
A shared 2-core machine drifts by 20% from minute to minute: compare ratios, not seconds
from different runs.

``--cosine N``: also the cosine between fp32 and each int8 recipe's vectors of N texts (all of
them if fewer), its mean, minimum and 1st percentile.
``--variants a,b``: which variants (default: every one: fp32, int8 (the recipe of
``rag.providers.precision``), the mixed int8 recipes of ``RECIPES`` (which products stay fp32),
int8-per-tensor, fp32/int8 1 thread, fp32/int8 no spinning (intra-op threads sleep instead of
spinning while they wait), each recipe 2 batches at once (one-thread session, a batch per core,
as an index run embeds)); ``--batch N``: texts per batch.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from machine import speed_line

ROOT = Path(__file__).resolve().parents[1]
_LAYERS = r"encoder\.layer\.[0-2]\."
# Mixed-precision int8 recipes tried in session 29 (decision 032), each named by the weights
# whose matrix products stay fp32 (``quantize_keeping``); "int8" is the recipe precision: int8 runs.
RECIPES: dict[str, str | None] = {
    "int8": None,
    "int8-ffn-out": r"encoder\.layer\.\d+\.output\.dense\.weight\.T",
    "int8-ffn-out-0-2": _LAYERS + r"output\.dense\.weight\.T",
    "int8-ffn-0-2": _LAYERS + r"(intermediate|output)\.dense\.weight\.T",
    "int8-ffn-0-2+out": _LAYERS + r"intermediate\.dense\.weight\.T|encoder\.layer\.\d+\.output\.dense\.weight\.T",
}


def repository_texts() -> list[str]:
    """Every distinct indexed text of this repository's chunks (what `rag index --path .` embeds)."""
    from rag.chunking.model import indexed_text
    from rag.config import ChunkSettings
    from rag.dispatcher import chunk_bytes
    from rag.sources.scan import scan_source

    settings = ChunkSettings()
    texts: dict[str, None] = {}
    for file in scan_source(ROOT, max_file_size=settings.max_file_size).files:
        if file.path.startswith((".bench", ".venv", "eval/.cache")):
            continue
        chunked = chunk_bytes(file.abs_path.read_bytes(), file.path, max_tokens=settings.max_tokens,
                              overlap=settings.overlap)
        for chunk in chunked.chunks:
            texts[indexed_text(chunk.context, chunk.content)] = None
    return list(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--cosine", type=int, default=0)
    parser.add_argument("--variants", default="")
    args = parser.parse_args()

    import numpy as np

    from rag.providers.local import LocalEmbedder
    from rag.providers.onnx_runtime import OnnxEmbedding, batch_threads
    from rag.providers.precision import quantize

    print(speed_line())
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"CPU flags: {', '.join(cpu_flags()) or 'no VNNI'}")
    every = repository_texts()
    sample = random.Random(0).sample(every, min(args.texts, len(every)))
    print(f"texts: {len(sample)} of this repository's {len(every)} distinct chunk texts, "
          f"{sum(map(len, sample)) / len(sample):.0f} characters on average; batch {args.batch}")

    fp32 = LocalEmbedder()
    runtime = fp32._runtime()
    assert isinstance(runtime, OnnxEmbedding)
    fp32_file = runtime.exported()
    assert fp32_file is not None
    work = Path(tempfile.mkdtemp(prefix="bench-embed-"))
    files = {"fp32": fp32_file, "int8-per-tensor": work / "int8pt.onnx"}
    for recipe, fp32_weights in RECIPES.items():
        files[recipe] = work / f"{recipe}.onnx"
        if fp32_weights is None:
            files[recipe].write_bytes(quantize(fp32_file))
        else:
            quantize_keeping(fp32_file, files[recipe], fp32_weights)
    quantize_per_tensor(fp32_file, files["int8-per-tensor"])

    variants: dict[str, Callable[[list[str]], np.ndarray]] = {}
    cores = batch_threads()
    for name, threads, parallel, spinning in [
        ("fp32", cores, 1, True), ("int8", cores, 1, True), ("int8-per-tensor", cores, 1, True),
        ("fp32 1 thread", 1, 1, True), ("int8 1 thread", 1, 1, True),
        ("fp32 no spinning", cores, 1, False), ("int8 no spinning", cores, 1, False),
        *((f"{recipe} {cores} batches at once", 1, cores, True) for recipe in ("fp32", *RECIPES)),
    ]:
        file = files[name.split()[0]]
        variants[name] = encoder(runtime, file, threads, args.batch, parallel=parallel, spinning=spinning)
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()] or list(variants)
    for name in chosen:
        variants[name](sample[:8])  # load and warm up

    seconds: dict[str, list[float]] = {name: [] for name in chosen}
    for round_ in range(args.rounds):
        order = chosen if round_ % 2 == 0 else chosen[::-1]
        for name in order:
            started = time.perf_counter()
            variants[name](sample)
            seconds[name].append(time.perf_counter() - started)
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {seconds[n][-1]:.1f} s" for n in chosen)
              + f"; load average {os.getloadavg()[0]:.2f}")
    base = statistics.median(seconds[chosen[0]])
    print(f"{'variant':<20} {'texts/s':>8} {'median s':>9} {'spread s':>12} {'x ' + chosen[0]:>10}")
    for name in chosen:
        median = statistics.median(seconds[name])
        spread = f"{min(seconds[name]):.1f}-{max(seconds[name]):.1f}"
        print(f"{name:<20} {len(sample) / median:>8.1f} {median:>9.1f} {spread:>12} {base / median:>10.2f}")

    if args.cosine:
        texts = random.Random(1).sample(every, min(args.cosine, len(every)))
        reference = variants["fp32"](texts)
        for name in (*RECIPES, "int8-per-tensor"):
            encode = variants.get(name) or variants[f"{name} {cores} batches at once"]
            cosines = np.sum(reference * encode(texts), axis=1)
            print(f"cosine fp32 vs {name} on {len(texts)} texts: mean {cosines.mean():.5f}, "
                  f"1st percentile {np.percentile(cosines, 1):.5f}, min {cosines.min():.5f}")
    print(speed_line())


def quantize_per_tensor(source: Path, target: Path) -> None:
    """The int8 recipe's rejected variant: one scale per weight (ONNX Runtime's default)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=False,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def quantize_keeping(source: Path, target: Path, fp32_weights: str) -> None:
    """The int8 recipe with the matrix products of the weights ``fp32_weights`` matches kept fp32."""
    import re

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    kept = re.compile(fp32_weights)
    excluded = []
    for index, node in enumerate(model.graph.node):
        if not node.name:  # (the exporter names outputs, not nodes; nodes are excluded by name)
            node.name = f"{node.op_type}.{index}"
        if node.op_type == "MatMul" and any(kept.fullmatch(name) for name in node.input):
            excluded.append(node.name)
    named = target.with_suffix(".named.onnx")
    onnx.save(model, str(named))
    quantize_dynamic(named, target, weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=excluded,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def encoder(runtime: object, file: Path, threads: int, batch: int, *, parallel: int = 1,
            spinning: bool = True) -> Callable[[list[str]], "object"]:
    """Texts → normalized vectors (length-sorted batches) with ``file`` on ``threads`` intra-op threads,
    ``parallel`` batches at once (threads calling one session), spin-waiting between ops or not."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])
    tokenizer = runtime._onnx.tokenizer  # type: ignore[attr-defined]
    pool = ThreadPoolExecutor(max_workers=parallel)

    def encode(texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)

        def one(start: int) -> None:
            positions = order[start : start + batch]
            encodings = tokenizer.encode_batch([texts[i].strip() for i in positions])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[positions] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

        list(pool.map(one, range(0, len(order), batch)))
        return out

    return encode


def cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    return sorted({flag for flag in ("avx512_vnni", "avx_vnni", "amx_int8") if f" {flag}" in text})


if __name__ == "__main__":
    sys.exit(main())
