"""What a sentence-transformers model directory says about running it without torch.

Owns reading a model folder's own files (``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json``, ``config_sentence_transformers.json``, ``config.json``,
``tokenizer_config.json``) into the few settings the ONNX runtime needs (pooling,
window, prompts, architecture), resolving a Hugging Face id to its folder in the
local cache (downloaded first unless HF_HUB_OFFLINE is set), and the folder's
content hash that keys its exported ONNX file.
Raises UnsupportedModel when the files describe something only sentence-transformers
can run (a Dense layer, an unknown pooling mode…): the caller falls back to it.
"""

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import ProviderError

# Pooling modes the ONNX path computes itself, by their 1_Pooling/config.json key.
POOLING_MODES = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}
# Modules after the transformer that change nothing the ONNX path must reproduce:
# vectors are always normalized, and a pooling module is read separately.
_PASSIVE_MODULES = ("Normalize",)
# ST's encode_document uses the first of these prompts that the model defines.
_DOCUMENT_PROMPTS = ("document", "passage", "corpus")
_HASHED_SUFFIXES = (".json", ".safetensors", ".bin", ".txt", ".model")
# What a hub download fetches: what either runtime reads, not the ONNX, OpenVINO or
# PyTorch copies of the weights many repositories also carry.
_HUB_FILES = ["*.json", "*.txt", "*.model", "*.safetensors"]


class UnsupportedModel(Exception):
    """The model is valid but needs sentence-transformers to run; the message says why."""


@dataclass(frozen=True)
class TransformerModel:
    """The transformer inside a model folder: its files, architecture and token window."""

    folder: Path  # holds config.json, the weights and tokenizer.json
    config: dict[str, Any]
    max_length: int
    lower_case: bool = False

    @property
    def architecture(self) -> str:
        return str(self.config.get("model_type", "unknown"))


@dataclass(frozen=True)
class EmbeddingModel:
    """A sentence-transformers embedding model as the ONNX path runs it."""

    source: Path
    transformer: TransformerModel
    pooling: str  # one of POOLING_MODES' values
    dimensions: int
    prompts: dict[str, str] = field(default_factory=dict)

    def prompt(self, *, query: bool) -> str:
        """The text put before each input, as ST's encode_query / encode_document do."""
        names = ("query",) if query else _DOCUMENT_PROMPTS
        for name in names:
            if name in self.prompts:
                return self.prompts[name]
        return ""


@dataclass(frozen=True)
class CrossEncoderModel:
    """A sequence-classification model scoring (query, document) pairs with one label."""

    source: Path
    transformer: TransformerModel
    sigmoid: bool  # ST applies a sigmoid to a one-label cross-encoder unless its config says otherwise


def local_folder(model: str, provider: str) -> Path:
    """The folder of ``model``: a path as given, or a Hugging Face id's snapshot (``hub_snapshot``)."""
    path = Path(model).expanduser()
    if path.exists():
        return path
    # A Hugging Face id is "name" or "owner/name"; anything else was meant as a path.
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ProviderError(f"{provider}: model directory {path} does not exist")
    return hub_snapshot(model, provider)


def hub_snapshot(model: str, provider: str, tried: str = "") -> Path:
    """A Hugging Face id's files from the local cache, downloaded first unless HF_HUB_OFFLINE is set.

    Only what the runtimes read is fetched (configs, tokenizer, safetensors weights), from
    ``HF_ENDPOINT`` when set. ``tried`` names the places already looked in, for the error.
    """
    from huggingface_hub import snapshot_download

    offline = hub_offline()
    endpoint = os.environ.get("HF_ENDPOINT") or None
    try:
        return Path(
            snapshot_download(
                model, local_files_only=offline, endpoint=endpoint, allow_patterns=_HUB_FILES
            )
        )
    except Exception as exc:  # the hub raises many kinds: offline, not found, HTTP, DNS…
        where = endpoint or "huggingface.co"
        looked = f"{tried}, " if tried else ""
        if offline:
            raise ProviderError(
                f"{provider}: model '{model}' is not in the Hugging Face cache and HF_HUB_OFFLINE is set "
                f"(looked in: {looked}the cache); unset HF_HUB_OFFLINE to download it once, or use a path "
                "to a model directory"
            ) from None
        raise ProviderError(
            f"{provider}: model '{model}' could not be downloaded from {where} ({type(exc).__name__}; "
            f"looked in: {looked}the Hugging Face cache, the hub); download it where the hub is "
            f"reachable (hf download {model}) or use a path to a model directory"
        ) from None


def hub_offline() -> bool:
    """Whether models may load from disk only (HF_HUB_OFFLINE=1); call just before loading one."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return os.environ.get("HF_HUB_OFFLINE", "").lower() not in ("", "0", "false", "no")


def read_embedding_model(source: Path) -> EmbeddingModel:
    """The settings of a sentence-transformers model folder; ProviderError if it is not one."""
    modules = read_json(source / "modules.json")
    if not isinstance(modules, list):
        raise ProviderError(
            f"local: '{source}' is not a sentence-transformers model (no modules.json); use a folder "
            "saved by SentenceTransformer.save() or a model id such as sentence-transformers/all-MiniLM-L6-v2"
        )
    kinds = [
        (str(m.get("type", "")).rsplit(".", 1)[-1], str(m.get("path", "")))
        for m in modules
        if isinstance(m, dict)
    ]
    if not kinds or kinds[0][0] != "Transformer":
        raise UnsupportedModel(
            f"its first module is {kinds[0][0] if kinds else 'missing'}, not a Transformer"
        )
    pooling_paths = [path for kind, path in kinds[1:] if kind == "Pooling"]
    others = [kind for kind, _ in kinds[1:] if kind not in ("Pooling", *_PASSIVE_MODULES)]
    if others or len(pooling_paths) != 1:
        raise UnsupportedModel(
            f"its modules ({', '.join(k for k, _ in kinds)}) are not Transformer + Pooling"
        )
    transformer = _read_transformer(source / kinds[0][1])
    pooling_config = read_json(source / pooling_paths[0] / "config.json")
    if not isinstance(pooling_config, dict):
        raise UnsupportedModel(f"{pooling_paths[0]}/config.json is missing or unreadable")
    pooling = _pooling_mode(pooling_config)
    settings = read_json(source / "config_sentence_transformers.json")
    prompts = settings.get("prompts") if isinstance(settings, dict) else None
    default_prompt = settings.get("default_prompt_name") if isinstance(settings, dict) else None
    if default_prompt:
        raise UnsupportedModel(f"it applies the prompt '{default_prompt}' to every text")
    dimensions = int(pooling_config.get("word_embedding_dimension") or transformer.config["hidden_size"])
    return EmbeddingModel(
        source, transformer, pooling, dimensions, {str(k): str(v) for k, v in (prompts or {}).items()}
    )


def read_cross_encoder(source: Path) -> CrossEncoderModel:
    """A cross-encoder folder (saved by CrossEncoder or a plain *ForSequenceClassification)."""
    modules = read_json(source / "modules.json")
    folder = source
    if isinstance(modules, list) and modules and isinstance(modules[0], dict):
        folder = source / str(modules[0].get("path", ""))
    transformer = _read_transformer(folder)
    settings = read_json(source / "config_sentence_transformers.json")
    activation = settings.get("activation_fn") if isinstance(settings, dict) else None
    legacy = transformer.config.get("sentence_transformers") or {}
    activation = (
        activation
        or legacy.get("activation_fn")
        or transformer.config.get("sbert_ce_default_activation_function")
    )
    if activation is None:
        sigmoid = True
    elif activation.endswith(("Sigmoid", "Identity")):
        sigmoid = activation.endswith("Sigmoid")
    else:
        raise UnsupportedModel(f"its activation {activation} is not Sigmoid or Identity")
    return CrossEncoderModel(source, transformer, sigmoid)


def label_count(config: dict[str, Any]) -> int:
    """How many scores per input a *ForSequenceClassification config gives."""
    labels = config.get("id2label")
    return len(labels) if isinstance(labels, dict) and labels else int(config.get("num_labels", 2))


def content_hash(folder: Path) -> str:
    """sha256 over the names and bytes of the files that define the model (weights, configs, tokenizer).

    Reading ~90 MB of weights takes a moment, so the hash is remembered in ``memo`` keyed
    by the files' paths, sizes and modification times, and recomputed when any changes.
    """
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix in _HASHED_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def stat_fingerprint(folder: Path) -> str:
    """A cheap key that changes whenever a file of ``folder`` is replaced, grows or is touched."""
    digest = hashlib.sha256(str(folder.resolve()).encode())
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in _HASHED_SUFFIXES:
            stat = path.stat()
            digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _read_transformer(folder: Path) -> TransformerModel:
    config = read_json(folder / "config.json")
    if not isinstance(config, dict):
        raise ProviderError(
            f"local: {folder / 'config.json'} is missing or not JSON; the model folder is incomplete"
        )
    if not (folder / "tokenizer.json").is_file():
        raise UnsupportedModel("it has no tokenizer.json (a slow tokenizer only)")
    settings = read_json(folder / "sentence_bert_config.json")
    settings = settings if isinstance(settings, dict) else {}
    tokenizer = read_json(folder / "tokenizer_config.json")
    tokenizer = tokenizer if isinstance(tokenizer, dict) else {}
    positions = int(config.get("max_position_embeddings", 512))
    if config.get("model_type") in ("roberta", "xlm-roberta"):
        positions -= int(config.get("pad_token_id", 1)) + 1  # positions start after the padding index
    window = settings.get("max_seq_length") or tokenizer.get("model_max_length") or positions
    return TransformerModel(folder, config, min(int(window), positions), bool(settings.get("do_lower_case")))


def _pooling_mode(config: dict[str, Any]) -> str:
    mode = config.get("pooling_mode")  # newer sentence-transformers save the name
    if isinstance(mode, str):
        chosen = [mode.replace("mean_tokens", "mean").replace("cls_token", "cls")]
    else:
        chosen = [name for key, name in POOLING_MODES.items() if config.get(key)]
        unknown = [
            key
            for key, value in config.items()
            if key.startswith("pooling_mode") and value and key not in POOLING_MODES
        ]
        chosen += unknown
    if len(chosen) != 1 or chosen[0] not in POOLING_MODES.values():
        raise UnsupportedModel(
            f"its pooling ({', '.join(chosen) or 'none'}) is not one of {', '.join(POOLING_MODES.values())}"
        )
    if config.get("include_prompt") is False:
        raise UnsupportedModel("its pooling leaves the prompt out")
    return chosen[0]


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
