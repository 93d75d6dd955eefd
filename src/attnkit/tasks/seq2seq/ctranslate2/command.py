"""``attnkit export``, a command the seq2seq task brings: a trained Transformer checkpoint as a CTranslate2 model
directory (:mod:`attnkit.tasks.seq2seq.ctranslate2`), which ``attnkit translate --backend ctranslate2`` decodes."""

from __future__ import annotations

import argparse

from attnkit.tasks.options import CHECKPOINT_HELP, add_runtime_options, positive_int

EXAMPLES = """examples:
  attnkit export --checkpoint runs/g2p-tf --format ctranslate2 --out exports/g2p-tf
  attnkit export --checkpoint runs/bible-tf --format ctranslate2 --quantize int8 --out exports/bible-int8
  attnkit translate --backend ctranslate2 --checkpoint exports/g2p-tf --text attention --beam 4
"""
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16", "float16")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``export``."""
    parser = sub.add_parser(
        "export",
        help="export a Transformer seq2seq checkpoint to CTranslate2",
        description="Write a trained Transformer seq2seq checkpoint as a CTranslate2 model directory (weights, "
        "vocabularies, attnkit's tokenisers and a manifest that refuses tampered files). RNN models are not "
        "supported by CTranslate2's Transformer spec.",
        epilog=EXAMPLES,
    )
    parser.add_argument("--checkpoint", required=True, help=CHECKPOINT_HELP)
    parser.add_argument("--format", choices=["ctranslate2"], default="ctranslate2", help="(default ctranslate2)")
    parser.add_argument("--quantize", choices=QUANTIZATIONS, default="float32", help="weight type (default float32)")
    parser.add_argument(
        "--max-positions", type=positive_int, default=None, help="longest sequence the exported tables cover"
    )
    parser.add_argument("--out", required=True, help="the export directory to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier export at OUT")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit export``."""
    from attnkit.checkpointing import resolve_checkpoint
    from attnkit.tasks.seq2seq.ctranslate2.export import export_ctranslate2
    from attnkit.tasks.seq2seq.inference import load_seq2seq

    checkpoint = resolve_checkpoint(args.checkpoint)
    loaded = load_seq2seq(checkpoint, device="cpu")
    options = {} if args.max_positions is None else {"max_positions": args.max_positions}
    options |= {"model_config": loaded.config.to_dict(), "source": str(checkpoint), "overwrite": args.overwrite}
    quantization = None if args.quantize == "float32" else args.quantize
    tokenizers = (loaded.source_tokenizer, loaded.target_tokenizer)
    written = export_ctranslate2(loaded.model, *tokenizers, args.out, quantization=quantization, **options)
    print(f"exported {checkpoint} to {written} ({args.quantize} weights)")
    return 0
