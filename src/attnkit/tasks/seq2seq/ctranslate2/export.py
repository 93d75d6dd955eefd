"""Ship a trained Transformer seq2seq model to CTranslate2 and decode with it, tokenised by attnkit (layer 5).

    export_ctranslate2(model, source_tok, target_tok, "exports/dates", quantization="int8")
    translator = load_ctranslate2("exports/dates")
    translator.translate(["March 4, 1997"], beam_size=4, num_hypotheses=2)
    # [[Hypothesis(text='1997-03-04', score=-0.01, token_ids=[...], finished=True), Hypothesis(...)]]

An export directory holds CTranslate2's own model (any CTranslate2 user can load it), attnkit's tokenisers and a
manifest, ``attnkit_export.json``, recording what was exported and the SHA-256 of every file;
:func:`load_ctranslate2` checks them all first. In float32 the decoded tokens are attnkit's up to float rounding (a
near-tie may go either way).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from attnkit.data.seq2seq import DataError, Tokenizer, load_tokenizers, save_tokenizers
from attnkit.data.seq2seq.vocab import SPECIALS
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq
from attnkit.tasks.seq2seq.config import KIND
from attnkit.tasks.seq2seq.ctranslate2.manifest import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_FILE,
    ExportError,
    check_destination,
    file_table,
    json_sha256,
    move_into_place,
    remove_stale_partials,
    verify_export,
    weights_sha256,
)
from attnkit.tasks.seq2seq.ctranslate2.spec import describe_transformer, transformer_spec
from attnkit.tasks.seq2seq.ctranslate2.translator import CTranslate2Translator, Hypothesis

__all__ = [
    "MANIFEST_FILE",
    "QUANTIZATIONS",
    "CTranslate2Translator",
    "ExportError",
    "Hypothesis",
    "export_ctranslate2",
    "load_ctranslate2",
    "verify_export",
]

QUANTIZATIONS = (None, "int8", "int8_float32", "int16", "float16")
DEFAULT_MAX_POSITIONS = 1024


def _ctranslate2() -> Any:
    try:
        import ctranslate2
    except ImportError:
        raise ExportError(
            "the CTranslate2 backend needs the ctranslate2 package: pip install 'attnkit[deploy]'"
        ) from None
    return ctranslate2


def _token_list(tokenizer: Tokenizer, side: str) -> list[str]:
    """Token ``i`` for id ``i``: the vocabulary CTranslate2 maps strings through (distinct, attnkit's specials first)."""
    tokens = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]
    if tokens[: len(SPECIALS)] != list(SPECIALS):
        raise ValueError(f"{side}_tokenizer must start with attnkit's specials {list(SPECIALS)}")
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{side}_tokenizer maps two ids to one token string; CTranslate2 needs distinct tokens")
    return tokens


def export_ctranslate2(
    model: TransformerSeq2Seq,
    source_tokenizer: Tokenizer,
    target_tokenizer: Tokenizer,
    out_dir: str | Path,
    *,
    quantization: str | None = None,
    max_positions: int = DEFAULT_MAX_POSITIONS,
    model_config: dict[str, Any] | None = None,
    source: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``model`` and its tokenisers as a CTranslate2 model directory with an attnkit manifest; return it.

    ``out_dir`` is written under a temporary name and renamed, so it is never half-written. ``max_positions``: rows
    of the sinusoidal position table, the longest source and ``max_len`` it can decode.
    """
    source_tokens, target_tokens = _checked_tokens(
        model, source_tokenizer, target_tokenizer, quantization, max_positions
    )
    ctranslate2 = _ctranslate2()
    out_dir = Path(out_dir)
    remove_stale_partials(out_dir)
    check_destination(out_dir, overwrite)
    spec, description = transformer_spec(model, source_tokens, target_tokens, max_positions=max_positions)
    spec.validate()
    spec.optimize(quantization=quantization)
    partial = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        spec.save(str(partial))
        tokenizer_files = [p.name for p in save_tokenizers(partial, source_tokenizer, target_tokenizer)]
        manifest = {
            **_manifest_head(ctranslate2.__version__, quantization),
            "model": description,
            "model_config_sha256": json_sha256(description),
            "weights_sha256": weights_sha256(model),
            "model_config": model_config,
            "source": source,
            "tokenizers": tokenizer_files,
            "files": file_table(partial),
        }
        (partial / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        move_into_place(partial, out_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return out_dir


def _checked_tokens(
    model: TransformerSeq2Seq, source: Tokenizer, target: Tokenizer, quantization: str | None, max_positions: int
) -> tuple[list[str], list[str]]:
    """The source and target token lists of an export, once the options, the model and the tokenisers are checked
    to fit one another."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}")
    if max_positions < 1:
        raise ValueError(f"max_positions must be >= 1, got {max_positions}")
    describe_transformer(model)  # refuses RNNs and what CTranslate2 cannot run, before anything else
    source_tokens, target_tokens = _token_list(source, "source"), _token_list(target, "target")
    for side, tokens, embedding in (
        ("source", source_tokens, model.source_embedding),
        ("target", target_tokens, model.target_embedding),
    ):
        if len(tokens) != embedding.num_embeddings:
            raise ValueError(
                f"{side}_tokenizer has {len(tokens)} ids but the model's {side} embedding has {embedding.num_embeddings}"
            )
    return source_tokens, target_tokens


def _manifest_head(ctranslate2_version: str, quantization: str | None) -> dict[str, Any]:
    """The first entries of an export's manifest: its format, the versions that wrote it, the weights' type."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": KIND,
        "attnkit_version": _attnkit_version(),
        "ctranslate2_version": ctranslate2_version,
        "quantization": quantization,
    }


def _attnkit_version() -> str:
    from attnkit import __version__

    return __version__


def load_ctranslate2(
    directory: str | Path,
    *,
    device: str = "cpu",
    compute_type: str = "default",
    threads: int = 0,
    device_index: int = 0,
) -> CTranslate2Translator:
    """Verify an export (:func:`verify_export`) and load it for decoding on CTranslate2's ``device``; ``threads``:
    its ``intra_threads`` (0: its default); ``compute_type`` ``"default"``: the exported weights' type."""
    manifest = verify_export(directory)
    directory = Path(directory)
    try:
        source_tokenizer, target_tokenizer = load_tokenizers(directory)
    except DataError as error:
        raise ExportError(str(error)) from None
    model = manifest["model"]
    for side, tokenizer in (("source", source_tokenizer), ("target", target_tokenizer)):
        if tokenizer.vocab_size != model[f"{side}_vocab_size"]:
            raise ExportError(
                f"{directory}: the {side} tokenizer has {tokenizer.vocab_size} ids, the model {model[f'{side}_vocab_size']}"
            )
    ctranslate2 = _ctranslate2()
    try:
        translator = ctranslate2.Translator(
            str(directory), device=device, device_index=device_index, compute_type=compute_type, intra_threads=threads
        )
    except (RuntimeError, ValueError) as error:
        raise ExportError(f"{directory}: CTranslate2 cannot load it ({error})") from None
    return CTranslate2Translator(translator, source_tokenizer, target_tokenizer, manifest)
