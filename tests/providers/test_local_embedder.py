"""The local provider with the real bundled all-MiniLM-L6-v2 model (loads in a few seconds)."""

import math

import pytest

from rag.providers import LocalEmbedder, ProviderError

pytestmark = pytest.mark.slow  # loads the bundled model


@pytest.fixture(scope="module")
def minilm():
    return LocalEmbedder()


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))  # vectors are normalized


def test_bundled_model_id_is_known_without_loading():
    embedder = LocalEmbedder("sentence-transformers/all-MiniLM-L6-v2")

    assert embedder.model_id == "local:all-MiniLM-L6-v2@384"
    assert embedder.dimensions == 384
    assert embedder._loaded is None


def test_documents_are_normalized_ordered_and_meaningful(minilm):
    texts = [
        "def parse_json(path): return json.loads(Path(path).read_text())",
        "The quarterly sales figures rose in the northern region.",
        "def load_config(file): return json.load(open(file))",
    ]
    done: list[int] = []

    vectors = minilm.embed_documents(texts, progress=done.append)

    assert [len(vector) for vector in vectors] == [384, 384, 384]
    assert all(math.isclose(cosine(v, v), 1.0, abs_tol=1e-5) for v in vectors)
    assert cosine(vectors[0], vectors[2]) > cosine(vectors[0], vectors[1]) + 0.2
    assert done == [3]
    # Sorting by length inside must not reorder the answer.
    assert cosine(vectors[1], minilm.embed_documents([texts[1]])[0]) > 0.9999


def test_progress_is_reported_per_batch():
    embedder = LocalEmbedder(batch_size=2)
    done: list[int] = []

    embedder.embed_documents(["a", "bb", "ccc", "dddd", "eeeee"], progress=done.append)

    assert done == [2, 2, 1]


def test_query_finds_the_matching_document(minilm):
    documents = minilm.embed_documents(
        ["How to install the package with pip", "Reading and writing CSV files with pandas"]
    )

    query = minilm.embed_query("pip install instructions")

    assert len(query) == 384
    assert math.isclose(cosine(query, query), 1.0, abs_tol=1e-5)
    assert cosine(query, documents[0]) > cosine(query, documents[1])


@pytest.mark.torch
def test_a_query_on_torch_leaves_its_thread_count_as_it_was():
    import torch

    embedder = LocalEmbedder(runtime="sentence-transformers")
    threads = torch.get_num_threads()

    embedder.embed_query("pip install instructions")

    assert torch.get_num_threads() == threads


def test_model_missing_offline_says_how_to_fix():
    embedder = LocalEmbedder("intfloat/no-such-model-here")

    with pytest.raises(ProviderError) as error:
        embedder.embed_query("q")

    message = str(error.value)
    assert "'intfloat/no-such-model-here' is not in the Hugging Face cache and HF_HUB_OFFLINE is set" in message
    assert "unset HF_HUB_OFFLINE to download it once" in message


def test_missing_model_directory(tmp_path):
    with pytest.raises(ProviderError, match=r"model directory .*/absent does not exist"):
        LocalEmbedder(str(tmp_path / "absent")).embed_query("q")


def test_directory_that_is_not_a_model(tmp_path):
    with pytest.raises(ProviderError, match="is not a sentence-transformers model"):
        LocalEmbedder(str(tmp_path)).embed_query("q")
