"""What a ``--hf-model`` directory must hold before ``transformers`` reads it (layer 5): a ``config.json`` whose
``model_type`` this ``transformers`` knows, whole weights files, and the tokenizer's own files. Each fault is one
``OSError`` naming the file or field, raised before anything runs: ``transformers`` itself accepts a directory with
no tokenizer files (it builds an empty vocabulary from the config, and every word becomes ``[UNK]``), and a weights
file cut short ends in a deserialiser's error that names neither the file nor the cause.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

__all__ = ["TOKENIZER_FILES", "WEIGHTS_FILES", "check_directory", "check_tokenizer"]

# Files that hold a tokenizer's vocabulary (fast, WordPiece, BPE, SentencePiece): one must be there.
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model")  # fmt: skip
WEIGHTS_FILES = ("model.safetensors", "pytorch_model.bin")


def check_directory(path: Path, known_model_types: Any) -> dict[str, Any]:
    """The ``config.json`` of the saved model in ``path`` once the directory passes the checks above
    (``known_model_types``: the ``model_type`` names this ``transformers`` knows). A missing directory, config,
    weights or tokenizer file raises ``FileNotFoundError``; the other faults ``OSError``."""
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such directory (--hf-model takes a local save_pretrained directory)")
    config_path = path / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{path}: no config.json (not a saved Hugging Face model)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise OSError(f"{config_path}: not JSON ({error})") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str) or not model_type:
        raise OSError(f"{config_path}: no 'model_type' field (not a saved Hugging Face model)")
    if model_type not in known_model_types:
        raise OSError(
            f"{config_path}: model_type {model_type!r} is not one this transformers knows (a newer transformers, "
            "or a model with its own code, which attnkit does not run)"
        )
    _check_weights(path)
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise FileNotFoundError(
            f"{path}: no tokenizer files ({', '.join(TOKENIZER_FILES[:2])}, ...): save the tokenizer beside the "
            "model (tokenizer.save_pretrained) or every word would read as unknown"
        )
    return config


def _check_weights(path: Path) -> None:
    """Refuse a directory with no weights, or a safetensors file shorter or longer than its header says."""
    files = sorted(path.glob("*.safetensors")) + sorted(path.glob("pytorch_model*.bin"))
    if not files:
        raise FileNotFoundError(f"{path}: no weights file ({' or '.join(WEIGHTS_FILES)})")
    for file in files:
        if file.suffix != ".safetensors":
            continue
        size = file.stat().st_size
        with file.open("rb") as handle:
            head = handle.read(8)
            length = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            header = handle.read(length) if 0 <= length <= size - 8 else b""
        try:
            tensors = json.loads(header)
            end = max([0, *(entry["data_offsets"][1] for key, entry in tensors.items() if key != "__metadata__")])
        except (ValueError, KeyError, TypeError, IndexError):
            raise OSError(f"{file}: not a whole safetensors file (its header cannot be read: cut short?)") from None
        if 8 + length + end != size:
            raise OSError(f"{file}: {size:,} bytes where its header announces {8 + length + end:,} (cut short?)")


def check_tokenizer(path: Path, tokenizer: Any) -> None:
    """Refuse a tokenizer that knows no word (only its special tokens), whatever files it came from."""
    specials = set(getattr(tokenizer, "all_special_ids", []) or [])
    if len(tokenizer) <= len(specials):
        raise OSError(f"{path}: its tokenizer knows only special tokens, no words: every word would read as unknown")
