"""The local model's precision (issue 55): int8 only where measured faster, never mixed with fp32.

The check behind ``precision: auto`` is given sessions that take a known time (the CPU
is the boundary here, as HTTP is for the hosted providers): it must keep fp32 where int8
is slower or barely faster, take int8 where it is clearly faster, and remember the answer.
The real int8 model is guarded by its vectors: close to fp32's (cosine), under a model id
of its own, stored beside the fp32 export.
"""

import time
from pathlib import Path

import numpy as np
import pytest

from rag.config import LocalEmbeddings
from rag.errors import ProviderError
from rag.providers import LocalEmbedder, make_embedder
from rag.providers.precision import AUTO_MARGIN, choose, remembered


class TakesSeconds:
    """A session whose every run takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.runs = 0

    def run(self, outputs: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.runs += 1
        time.sleep(self.seconds)
        return [np.zeros((len(feed["input_ids"]), 4), dtype=np.float32)]


def chosen(model: str, fp32_seconds: float, int8_seconds: float) -> str:
    fp32, int8 = TakesSeconds(fp32_seconds), TakesSeconds(int8_seconds)
    answer = choose(model, lambda: fp32, lambda: int8, vocabulary=30522)  # type: ignore[arg-type,return-value]
    assert fp32.runs == int8.runs > 1, "both timed, more than once"
    return answer


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "rag-home"))


def test_auto_keeps_fp32_where_int8_is_slower() -> None:
    assert chosen("slower-int8", 0.02, 0.04) == "fp32"
    assert remembered("slower-int8") == "fp32"


def test_auto_keeps_fp32_where_int8_is_only_a_little_faster() -> None:
    assert chosen("close", 0.1, 0.1 * (AUTO_MARGIN + 0.1)) == "fp32"


def test_auto_takes_int8_where_it_is_clearly_faster_and_remembers_it() -> None:
    assert chosen("faster-int8", 0.05, 0.01) == "int8"
    never = TakesSeconds(0.0)
    assert choose("faster-int8", lambda: never, lambda: never, 30522) == "int8"  # type: ignore[arg-type,return-value]
    assert never.runs == 0, "remembered: not measured again"


def test_a_remembered_choice_gives_the_model_id_without_loading_the_model() -> None:
    chosen("all-MiniLM-L6-v2", 0.05, 0.01)
    embedder = LocalEmbedder(precision="auto")
    assert embedder.model_id == "local:all-MiniLM-L6-v2@384~int8"
    assert embedder._loaded is None
    assert LocalEmbedder().model_id == "local:all-MiniLM-L6-v2@384", "fp32 keeps the id existing indexes use"


def test_bad_precisions_are_refused() -> None:
    with pytest.raises(ProviderError, match="precision 'int4' is not one of auto, fp32, int8"):
        LocalEmbedder(precision="int4")
    with pytest.raises(ProviderError, match="int8 runs on ONNX Runtime on the CPU only"):
        LocalEmbedder(precision="int8", runtime="sentence-transformers")
    assert LocalEmbedder(precision="auto", runtime="sentence-transformers").precision == "fp32"


def test_the_config_key_reaches_the_embedder() -> None:
    from rag.config import EmbeddingsConfig
    from rag.providers import configured_embedder

    config = EmbeddingsConfig(local=LocalEmbeddings(precision="int8"))
    assert configured_embedder(config).model_id.endswith("~int8")
    assert make_embedder("local", precision="int8").model_id.endswith("~int8")


@pytest.mark.slow
def test_int8_vectors_stay_close_to_fp32_under_an_id_of_their_own() -> None:
    from rag.dispatcher import chunk_file

    root = Path(__file__).resolve().parents[2]
    texts = ["where is the embedded database server started", "combine keyword and vector rankings"]
    for path in ("rag/indexer.py", "rag/search.py", "README.md", "sql/README.md"):
        texts += [chunk.content for chunk in chunk_file(root / path, path, max_tokens=256).chunks][:15]
    fp32, int8 = LocalEmbedder(), LocalEmbedder(precision="int8")

    cosines = (np.asarray(fp32.embed_documents(texts)) * np.asarray(int8.embed_documents(texts))).sum(axis=1)
    query = float(np.dot(fp32.embed_query(texts[0]), int8.embed_query(texts[0])))

    assert int8.model_id == "local:all-MiniLM-L6-v2@384~int8" != fp32.model_id
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.97, (cosines.mean(), cosines.min())
    assert query >= 0.97
    stored = int8.prepare()
    assert stored is not None and stored.name == "embedding-int8-r1.onnx"
    assert stored.parent == fp32.prepare().parent  # type: ignore[union-attr]
