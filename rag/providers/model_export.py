"""Turning a local transformer's weights into an ONNX file, and keeping that file.

Owns the export and the store under ``$RAG_HOME/models/<content hash>/model.onnx``, and
the files kept beside it (``files/``: configs and tokenizer) so that a stored export
runs when the weights it came from are gone.
The export needs neither torch nor a hub: it reads the ``model.safetensors``
weights with numpy and writes the encoder's graph with the ``onnx`` package,
for the architectures written out here (BERT and RoBERTa/XLM-R encoders, with
the pooler and classifier of a one-label ``*ForSequenceClassification``).
Anything else raises UnsupportedModel and runs on sentence-transformers instead.

A file is written to a temporary name in the same folder and renamed into place,
so two processes exporting at once never leave a half-written file; a file that
ONNX Runtime cannot load is exported again (see ``rag.providers.onnx_runtime``).
"""

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.providers.model_files import TransformerModel, UnsupportedModel, content_hash, stat_fingerprint

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("rag.providers")

OPSET = 17  # LayerNormalization is an operator from 17 on
ARCHITECTURES = ("bert", "roberta", "xlm-roberta")
EXPORT_VERSION = "1"  # bump when the graph written here changes, so stored files are redone
# A model folder's files that run an exported model: everything but the weights.
_KEPT_SUFFIXES = (".json", ".txt", ".model")


def models_dir() -> Path:
    """``$RAG_HOME/models`` (or the user data directory's)."""
    from rag.embedded import data_dir

    return data_dir() / "models"


def stored_path(source: Path, kind: str) -> Path:
    """Where the ONNX file of ``source`` (a model folder) lives, keyed by its content hash.

    Hashing reads every weight, so the hash is remembered per file fingerprint
    (path, sizes, modification times) in ``models/fingerprints/``.
    """
    memo = models_dir() / "fingerprints" / f"{stat_fingerprint(source)}.txt"
    try:
        digest = memo.read_text().strip()
    except OSError:
        digest = ""
    if len(digest) != 64:
        digest = content_hash(source)
        with contextlib.suppress(OSError):  # a read-only home: hashed again next time; store() says so
            write_atomically(memo, digest.encode())
    return models_dir() / f"{digest[:32]}-v{EXPORT_VERSION}" / f"{kind}.onnx"


def keep_model_files(source: Path, onnx_file: Path, name: str) -> None:
    """Keep beside a stored ONNX file what runs it without the weights (configs, tokenizer), and
    record it under the model's ``name``, so the model still loads if its weights package goes."""
    files = onnx_file.parent / "files"
    if not (files / "config.json").is_file():
        for path in source.rglob("*"):
            if path.is_file() and path.suffix in _KEPT_SUFFIXES:
                target = files / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(target, path.read_bytes())
    write_atomically(_kept_record(name), str(onnx_file).encode())


def kept_export(name: str) -> tuple[Path, Path] | None:
    """(model files, ONNX file) that ``keep_model_files`` kept for ``name``, if both are still there."""
    try:
        onnx_file = Path(_kept_record(name).read_text(encoding="utf-8").strip())
    except OSError:
        return None
    files = onnx_file.parent / "files"
    return (files, onnx_file) if onnx_file.is_file() and (files / "config.json").is_file() else None


def _kept_record(name: str) -> Path:
    return models_dir() / "by-name" / f"{name.replace('/', '--')}.txt"


def export(transformer: TransformerModel, *, head: bool) -> bytes:
    """The ONNX model of ``transformer`` as bytes: the last hidden state, or with ``head`` the logits."""
    architecture = transformer.architecture
    if architecture not in ARCHITECTURES:
        raise UnsupportedModel(
            f"its architecture '{architecture}' has no torch-free ONNX export here "
            f"(supported: {', '.join(ARCHITECTURES)})"
        )
    weights_file = transformer.folder / "model.safetensors"
    if not weights_file.is_file():
        raise UnsupportedModel("its weights are not in model.safetensors")
    from safetensors.numpy import load_file

    weights = load_file(str(weights_file))
    return _EncoderGraph(transformer.config, weights, head=head).build()


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` at ``path``, complete or not at all, whoever else writes it at the same time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def store(path: Path, data: bytes) -> bool:
    """Keep an exported file for later processes; False, with a one-line warning, if it cannot be written."""
    try:
        write_atomically(path, data)
    except OSError as exc:
        log.warning(
            "local: cannot store the ONNX model in %s (%s); it is rebuilt by every process "
            "until that folder is writable (set RAG_HOME to a writable folder)",
            path.parent,
            exc.strerror or exc,
        )
        return False
    return True


class _EncoderGraph:
    """A BERT-style encoder written out as ONNX operators, weights as initializers.

    Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, batch x tokens);
    output ``last_hidden_state`` (float32, batch x tokens x hidden), or ``logits``
    (batch x labels) with the classification head. Follows transformers'
    BertModel / RobertaModel: post-LayerNorm layers, erf GELU, absolute positions.
    """

    def __init__(self, config: dict[str, Any], weights: dict[str, "np.ndarray"], *, head: bool) -> None:
        import onnx

        self.onnx = onnx
        self.config = config
        self.weights = weights
        self.head = head
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        prefixes = [
            p
            for p in ("", "bert.", "roberta.", "model.")
            if f"{p}embeddings.word_embeddings.weight" in weights
        ]
        if not prefixes:
            raise UnsupportedModel("its weights do not have BERT's names (embeddings.word_embeddings…)")
        self.prefix = prefixes[0]
        activation = config.get("hidden_act", "gelu")
        if activation != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
            raise UnsupportedModel(
                f"its activation '{activation}' or position embedding "
                f"'{config.get('position_embedding_type')}' is not BERT's default"
            )

    def build(self) -> bytes:
        onnx = self.onnx
        helper = onnx.helper
        hidden = self._embeddings()
        for layer in range(int(self.config["num_hidden_layers"])):
            hidden = self._layer(layer, hidden)
        output = self._classifier(hidden) if self.head else hidden
        self.nodes.append(
            helper.make_node("Identity", [output], ["logits" if self.head else "last_hidden_state"])
        )
        batch_tokens = ["batch", "tokens"]
        inputs = [
            helper.make_tensor_value_info(name, onnx.TensorProto.INT64, batch_tokens)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ]
        shape = ["batch", "labels"] if self.head else ["batch", "tokens", int(self.config["hidden_size"])]
        outputs = [
            helper.make_tensor_value_info(
                "logits" if self.head else "last_hidden_state", onnx.TensorProto.FLOAT, shape
            )
        ]
        graph = helper.make_graph(self.nodes, "encoder", inputs, outputs, self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="local-rag",
            producer_version=EXPORT_VERSION,
        )
        return bytes(model.SerializeToString())

    # -- building blocks ---------------------------------------------------------------

    def _weight(self, name: str, *, transpose: bool = False) -> str:
        import numpy as np

        key = name if name.startswith("classifier.") else self.prefix + name
        if key not in self.weights:
            raise UnsupportedModel(f"its weights have no '{key}'")
        array = np.ascontiguousarray(self.weights[key].astype(np.float32))
        if transpose:
            array = np.ascontiguousarray(array.T)  # a Linear's (out, in) as MatMul's (in, out)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, key + (".T" if transpose else "")))
        return self.initializers[-1].name

    def _constant(self, name: str, value: Any, dtype: str = "float32") -> str:
        import numpy as np

        if not any(init.name == name for init in self.initializers):
            self.initializers.append(self.onnx.numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def _node(self, op: str, inputs: list[str], name: str, **attributes: Any) -> str:
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [name], **attributes))
        return name

    def _linear(self, x: str, module: str, out: str) -> str:
        product = self._node("MatMul", [x, self._weight(f"{module}.weight", transpose=True)], f"{out}.mm")
        return self._node("Add", [product, self._weight(f"{module}.bias")], out)

    def _layer_norm(self, x: str, module: str, out: str) -> str:
        epsilon = float(self.config.get("layer_norm_eps", 1e-12))
        return self._node(
            "LayerNormalization",
            [x, self._weight(f"{module}.weight"), self._weight(f"{module}.bias")],
            out,
            axis=-1,
            epsilon=epsilon,
        )

    def _embeddings(self) -> str:
        words = self._node(
            "Gather", [self._weight("embeddings.word_embeddings.weight"), "input_ids"], "emb.words"
        )
        if self.config.get("model_type") in ("roberta", "xlm-roberta"):
            # Positions count the non-padding tokens, after the padding index.
            pad = int(self.config.get("pad_token_id", 1))
            cumulative = self._node(
                "CumSum", ["attention_mask", self._constant("axis1", 1, "int64")], "pos.cumsum"
            )
            counted = self._node("Mul", [cumulative, "attention_mask"], "pos.counted")
            positions = self._node("Add", [counted, self._constant("pad_id", pad, "int64")], "pos.ids")
        else:
            shape = self._node("Shape", ["input_ids"], "pos.shape")
            length = self._node("Gather", [shape, self._constant("one", 1, "int64")], "pos.length")
            positions = self._node(
                "Range",
                [self._constant("zero", 0, "int64"), length, self._constant("one", 1, "int64")],
                "pos.ids",
            )
        placed = self._node(
            "Gather", [self._weight("embeddings.position_embeddings.weight"), positions], "emb.pos"
        )
        kinds = self._node(
            "Gather", [self._weight("embeddings.token_type_embeddings.weight"), "token_type_ids"], "emb.types"
        )
        total = self._node("Add", [self._node("Add", [words, placed], "emb.sum1"), kinds], "emb.sum")
        # Padding is left out of attention by a large negative bias on its scores.
        mask = self._node("Cast", ["attention_mask"], "mask.float", to=self.onnx.TensorProto.FLOAT)
        mask = self._node("Unsqueeze", [mask, self._constant("axes12", [1, 2], "int64")], "mask.4d")
        inverted = self._node("Sub", [self._constant("onef", 1.0), mask], "mask.inverted")
        self.mask_bias = self._node(
            "Mul", [inverted, self._constant("minf", -3.4028234663852886e38)], "mask.bias"
        )
        return self._layer_norm(total, "embeddings.LayerNorm", "emb.out")

    def _layer(self, index: int, x: str) -> str:
        heads = int(self.config["num_attention_heads"])
        size = int(self.config["hidden_size"]) // heads
        p = f"encoder.layer.{index}"
        split = self._constant("split_heads", [0, 0, heads, size], "int64")

        def per_head(module: str, perm: list[int]) -> str:
            projected = self._linear(x, f"{p}.attention.self.{module}", f"{p}.{module}")
            shaped = self._node("Reshape", [projected, split], f"{p}.{module}.heads")
            return self._node("Transpose", [shaped], f"{p}.{module}.t", perm=perm)

        query = per_head("query", [0, 2, 1, 3])
        key = per_head("key", [0, 2, 3, 1])
        value = per_head("value", [0, 2, 1, 3])
        scores = self._node("MatMul", [query, key], f"{p}.scores")
        scaled = self._node("Mul", [scores, self._constant(f"scale{size}", 1.0 / size**0.5)], f"{p}.scaled")
        masked = self._node("Add", [scaled, self.mask_bias], f"{p}.masked")
        probs = self._node("Softmax", [masked], f"{p}.probs", axis=-1)
        context = self._node("MatMul", [probs, value], f"{p}.context")
        merged = self._node("Transpose", [context], f"{p}.context.t", perm=[0, 2, 1, 3])
        merged = self._node(
            "Reshape", [merged, self._constant("merge_heads", [0, 0, -1], "int64")], f"{p}.context.merged"
        )
        attended = self._linear(merged, f"{p}.attention.output.dense", f"{p}.attn.out")
        x = self._layer_norm(
            self._node("Add", [attended, x], f"{p}.attn.res"),
            f"{p}.attention.output.LayerNorm",
            f"{p}.attn.norm",
        )
        inner = self._linear(x, f"{p}.intermediate.dense", f"{p}.ffn.in")
        inner = self._gelu(inner, f"{p}.ffn.gelu")
        out = self._linear(inner, f"{p}.output.dense", f"{p}.ffn.out")
        return self._layer_norm(
            self._node("Add", [out, x], f"{p}.ffn.res"), f"{p}.output.LayerNorm", f"{p}.out"
        )

    def _gelu(self, x: str, name: str) -> str:
        """0.5 · x · (1 + erf(x / √2)): the exact GELU, a pattern ONNX Runtime fuses."""
        scaled = self._node("Div", [x, self._constant("sqrt2", 2.0**0.5)], f"{name}.div")
        erf = self._node("Erf", [scaled], f"{name}.erf")
        shifted = self._node("Add", [erf, self._constant("onef", 1.0)], f"{name}.add")
        product = self._node("Mul", [x, shifted], f"{name}.mul")
        return self._node("Mul", [product, self._constant("half", 0.5)], name)

    def _classifier(self, hidden: str) -> str:
        first = self._node("Gather", [hidden, self._constant("zero", 0, "int64")], "cls.token", axis=1)
        if self.config.get("model_type") in ("roberta", "xlm-roberta"):
            # RobertaClassificationHead: dense + tanh + out_proj on the first token.
            dense = self._linear(first, "classifier.dense", "cls.dense")
            return self._linear(self._node("Tanh", [dense], "cls.tanh"), "classifier.out_proj", "cls.logits")
        pooled = self._node("Tanh", [self._linear(first, "pooler.dense", "cls.pooled.lin")], "cls.pooled")
        return self._linear(pooled, "classifier", "cls.logits")
