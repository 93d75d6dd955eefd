"""``attnkit translate``, the command the seq2seq task brings: decode texts with a trained checkpoint (greedy or
beam search).

Texts come from ``--text`` (repeatable), ``--file`` (one per line) or standard input. Output is one line per
input line, in order — a blank input line gives a blank output line — so the output aligns with the input
(``paste``, sacreBLEU). ``--json`` prints one object per text instead, with the score and the attention.
``--n-best N`` prints the beam's N best hypotheses of each text, with their scores.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from attnkit.tasks.options import FILE_HELP, add_file_column_option, add_runtime_options, positive_int, read_texts

EXAMPLES = """examples:
  attnkit translate --checkpoint runs/dates --text "4 March 1997" --text "03/04/1997"
  attnkit translate --checkpoint runs/g2p --beam 5 --text abbey --json
  attnkit translate --checkpoint runs/g2p-rnn runs/g2p-transformer --beam 5 --text abbey   (an ensemble)
  attnkit translate --checkpoint runs/bible/best --file verses_en.txt > verses_es.txt
  echo "In the beginning God created the heaven and the earth." | attnkit translate --checkpoint runs/bible
  attnkit translate --checkpoint runs/g2p --beam 5 --n-best 3 --text abbey --text zebra
  attnkit translate --checkpoint runs/bible --quantize int8 --file verses_en.txt   (int8 linear layers, CPU)
  attnkit translate --backend ctranslate2 --checkpoint exports/g2p --beam 5 --n-best 3 --text abbey --json

--json gives {"source", "translation", "score", "source_tokens", "target_tokens", "attention"}: attention[t][s]
is how much target token t attended to source token s (RNN: the decoder's attention; Transformer: the last
decoder layer's cross-attention averaged over heads; an ensemble and --backend ctranslate2 have none). "score" is
the length-normalised log-probability.

--n-best N (N <= --beam) prints N lines per text, best first: "INDEX<TAB>SCORE<TAB>HYPOTHESIS", INDEX counting
input lines from 0 (a blank line prints nothing); with --json each object gains "n_best": [{"translation",
"score", "target_tokens"}, ...].
"""


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--beam``, ``--length-penalty``, ``--max-len`` (evaluate, predict, translate)."""
    decode = parser.add_argument_group("seq2seq decoding")
    decode.add_argument("--beam", type=int, default=1, help="beam size; 1 decodes greedily (default 1)")
    decode.add_argument("--length-penalty", type=float, default=1.0, help="score = log P / length^α (default 1)")
    decode.add_argument(
        "--max-len", type=positive_int, default=None, help="most tokens per output (default 2·source + 10)"
    )
    decode.add_argument(
        "--quantize",
        choices=["int8"],
        default=None,
        help="int8: dynamic int8 quantisation of the linear layers for CPU inference (fp32, --device cpu); outputs "
        "differ slightly from float32's (speed and accuracy cost: docs/benchmarks.md)",
    )


def decoding_options(args: argparse.Namespace) -> dict:
    """The decoders' keywords from the decoding options."""
    options = {"beam_size": args.beam, "batch_size": args.batch_size, "length_penalty": args.length_penalty}
    return {**options, "max_len": args.max_len}


def check_decoding(args: argparse.Namespace) -> None:
    """Refuse decoding options no decoder accepts (before anything is loaded)."""
    if args.beam < 1:
        raise ValueError(f"--beam must be >= 1, got {args.beam}")
    n_best = getattr(args, "n_best", 1)
    if not 1 <= n_best <= args.beam:
        raise ValueError(f"--n-best must lie in [1, --beam] = [1, {args.beam}], got {n_best}")
    if getattr(args, "quantize", None) and getattr(args, "backend", "native") == "ctranslate2":
        raise ValueError(
            "--quantize is for the native backend; an export is quantised by `attnkit export --quantize int8`"
        )


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``translate``."""
    parser = sub.add_parser(
        "translate",
        help="decode texts with a seq2seq checkpoint",
        description=__doc__.split("\n\n")[1].replace("\n", " ").strip(),
        epilog=EXAMPLES,
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        nargs="+",
        help="a run directory, its best/ checkpoint or a shipped model's name; several (one task, one vocabulary) decode as an ensemble "
        "that averages their next-token distributions",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text to translate (repeatable)")
    source.add_argument("--file", help=FILE_HELP)
    add_file_column_option(parser)
    add_decoding_arguments(parser)
    parser.add_argument(
        "--n-best",
        type=int,
        default=1,
        metavar="N",
        help="print the beam's N best hypotheses with their scores (N <= --beam)",
    )
    parser.add_argument("--batch-size", type=positive_int, default=64, help="texts decoded at once (default 64)")
    parser.add_argument("--json", action="store_true", help="one JSON object per text, with attention weights")
    parser.add_argument(
        "--backend",
        choices=["native", "ctranslate2"],
        default="native",
        help="decode with attnkit (default), or with CTranslate2 from an `attnkit export` directory",
    )
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def _attention_rows(attention) -> list[list[float]]:
    """``[T, S]`` (RNN) as is; ``[T, L, H, S]`` (Transformer) -> the last layer averaged over heads."""
    if attention.dim() == 4:
        attention = attention[:, -1].mean(dim=1)  # [T, S]
    return [[round(float(w), 4) for w in row] for row in attention]


def _as_json(translation, loaded, n_best: int) -> dict:
    target_tok, source_tok = loaded.target_tokenizer, loaded.source_tokenizer
    record = {"source": translation.source, "translation": translation.text, "score": round(translation.score, 4)}
    record["source_tokens"] = source_tok.tokens(translation.source)
    record["target_tokens"] = [target_tok.id_to_token(i) for i in translation.token_ids or []]
    if translation.attention is not None:
        record["attention"] = _attention_rows(translation.attention)
    if n_best > 1:
        record["n_best"] = [
            _hypothesis_json(h.text, h.score, h.token_ids or [], target_tok) for h in translation.n_best
        ]
    return record


def _hypothesis_json(text: str, score: float, token_ids: list[int], target_tokenizer) -> dict:
    tokens = [target_tokenizer.id_to_token(i) for i in token_ids]
    return {"translation": text, "score": round(score, 4), "target_tokens": tokens}


def _print_outputs(
    args: argparse.Namespace, lines: list[str], outputs: list[tuple[list[tuple[float, str]], Any]]
) -> None:
    """Print one output per non-blank input line, in order. Each output is ``(hypotheses, record)``: the
    ``(score, text)`` of the best hypotheses, best first, and what ``--json`` prints."""
    outputs_left = iter(outputs)
    n_best = getattr(args, "n_best", 1)
    for index, line in enumerate(lines):
        if not line.strip():
            if not args.json and n_best == 1:
                print()
            continue
        hypotheses, record = next(outputs_left)
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
        elif n_best == 1:
            print(hypotheses[0][1])
        else:
            for score, text in hypotheses:
                print(f"{index}\t{score:.4f}\t{text}")


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit translate``."""
    from attnkit.checkpointing import resolve_checkpoint
    from attnkit.tasks.seq2seq.inference import load_seq2seq_ensemble

    check_decoding(args)
    lines = read_texts(args, keep_blank=True)  # refuse empty input before loading anything
    if args.backend == "ctranslate2":
        return print_ctranslate2(args, lines)
    checkpoints = [resolve_checkpoint(checkpoint) for checkpoint in args.checkpoint]
    loaded = load_seq2seq_ensemble(checkpoints, device=args.device, precision=args.precision, quantize=args.quantize)
    return print_translations(args, loaded, lines)


def print_translations(args: argparse.Namespace, loaded, lines: list[str] | None = None) -> int:
    """Translate ``lines`` (default: the command's input lines) with ``loaded`` and print one line (or JSON
    object, or ``--n-best`` lines) per input line."""
    lines = read_texts(args, keep_blank=True) if lines is None else lines
    texts = [line.strip() for line in lines if line.strip()]
    n_best = getattr(args, "n_best", 1)
    translations = loaded.translate(texts, need_weights=args.json, num_hypotheses=n_best, **decoding_options(args))
    outputs = [
        ([(h.score, h.text) for h in t.n_best], _as_json(t, loaded, n_best) if args.json else None)
        for t in translations
    ]
    _print_outputs(args, lines, outputs)
    return 0


def print_ctranslate2(args: argparse.Namespace, lines: list[str]) -> int:
    """``--backend ctranslate2``: decode ``lines`` with an exported model; one output line per input line."""
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import check_ctranslate2_options
    from attnkit.tasks.seq2seq.ctranslate2.export import load_ctranslate2

    device, index = check_ctranslate2_options(args)
    translator = load_ctranslate2(args.checkpoint[0], device=device, device_index=index, threads=args.threads or 0)
    target_tok = translator.target_tokenizer
    texts = [line.strip() for line in lines if line.strip()]
    found = translator.translate(texts, num_hypotheses=args.n_best, **decoding_options(args))
    outputs = []
    for source, hypotheses in zip(texts, found, strict=True):
        best = hypotheses[0]
        record = {"source": source, **_hypothesis_json(best.text, best.score, best.token_ids, target_tok)}
        if args.n_best > 1:
            record["n_best"] = [_hypothesis_json(h.text, h.score, h.token_ids, target_tok) for h in hypotheses]
        outputs.append(([(h.score, h.text) for h in hypotheses], record))
    _print_outputs(args, lines, outputs)
    return 0
