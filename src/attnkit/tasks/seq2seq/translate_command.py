"""``attnkit translate``, the command the seq2seq task brings: decode texts with a trained checkpoint (greedy or
beam search).

Texts come from ``--text`` (repeatable), ``--file`` (one per line) or standard input. Output is one line per
input line, in order — a blank input line gives a blank output line — so the output aligns with the input
(``paste``, sacreBLEU). ``--json`` prints one object per text instead, with the score and the attention.
"""

from __future__ import annotations

import argparse
import json

from attnkit.tasks.options import add_runtime_options, read_texts

EXAMPLES = """examples:
  attnkit translate --checkpoint runs/dates --text "4 March 1997" --text "03/04/1997"
  attnkit translate --checkpoint runs/g2p --beam 5 --text abbey --json
  attnkit translate --checkpoint runs/g2p-rnn runs/g2p-transformer --beam 5 --text abbey   (an ensemble)
  attnkit translate --checkpoint runs/bible/best --file verses_en.txt > verses_es.txt
  echo "In the beginning God created the heaven and the earth." | attnkit translate --checkpoint runs/bible

--json gives {"source", "translation", "score", "source_tokens", "target_tokens", "attention"}: attention[t][s]
is how much target token t attended to source token s (RNN: the decoder's attention; Transformer: the last
decoder layer's cross-attention averaged over heads; an ensemble has none). "score" is the length-normalised
log-probability.
"""


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--beam``, ``--length-penalty``, ``--max-len`` (evaluate, predict, translate)."""
    decode = parser.add_argument_group("seq2seq decoding")
    decode.add_argument("--beam", type=int, default=1, help="beam size; 1 decodes greedily (default 1)")
    decode.add_argument("--length-penalty", type=float, default=1.0, help="score = log P / length^α (default 1)")
    decode.add_argument("--max-len", type=int, default=None, help="most tokens per output (default 2·source + 10)")


def check_decoding(args: argparse.Namespace) -> None:
    """Refuse decoding options no decoder accepts (before anything is loaded)."""
    if args.beam < 1:
        raise ValueError(f"--beam must be >= 1, got {args.beam}")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``translate``."""
    parser = sub.add_parser(
        "translate",
        help="decode texts with a seq2seq checkpoint",
        description=__doc__.split("\n\n")[1].replace("\n", " ").strip(),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        nargs="+",
        help="a run directory or its best/ checkpoint; several (one task, one vocabulary) decode as an ensemble "
        "that averages their next-token distributions",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text to translate (repeatable)")
    source.add_argument("--file", help="a file with one text per line")
    add_decoding_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=64)
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


def _as_json(translation, loaded) -> dict:
    target_tok, source_tok = loaded.target_tokenizer, loaded.source_tokenizer
    record = {"source": translation.source, "translation": translation.text, "score": round(translation.score, 4)}
    record["source_tokens"] = source_tok.tokens(translation.source)
    record["target_tokens"] = [target_tok.id_to_token(i) for i in translation.token_ids or []]
    if translation.attention is not None:
        record["attention"] = _attention_rows(translation.attention)
    return record


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit translate``."""
    from attnkit.tasks.seq2seq.inference import load_seq2seq_ensemble
    from attnkit.training.checkpoint import resolve_checkpoint

    check_decoding(args)
    lines = read_texts(args, keep_blank=True)  # refuse empty input before loading anything
    if args.backend == "ctranslate2":
        return print_ctranslate2(args, lines)
    checkpoints = [resolve_checkpoint(checkpoint) for checkpoint in args.checkpoint]
    loaded = load_seq2seq_ensemble(checkpoints, device=args.device, precision=args.precision)
    return print_translations(args, loaded, lines)


def print_translations(args: argparse.Namespace, loaded, lines: list[str] | None = None) -> int:
    """Translate ``lines`` (default: the command's input lines) with ``loaded`` and print one line (or JSON
    object) per input line; a blank line gives a blank line."""
    lines = read_texts(args, keep_blank=True) if lines is None else lines
    texts = [line.strip() for line in lines if line.strip()]
    translations = iter(
        loaded.translate(
            texts,
            beam_size=args.beam,
            batch_size=args.batch_size,
            length_penalty=args.length_penalty,
            max_len=args.max_len,
            need_weights=args.json,
        )
    )
    for line in lines:
        if not line.strip():
            if not args.json:
                print()
            continue
        translation = next(translations)
        print(json.dumps(_as_json(translation, loaded), ensure_ascii=False) if args.json else translation.text)
    return 0


def print_ctranslate2(args: argparse.Namespace, lines: list[str]) -> int:
    """``--backend ctranslate2``: decode ``lines`` with an exported model; one output line per input line (JSON:
    the translation and its score, no attention)."""
    from attnkit.tasks.seq2seq.ctranslate2 import load_ctranslate2

    if len(args.checkpoint) != 1:
        raise ValueError("--backend ctranslate2 decodes one exported model (no ensembles)")
    translator = load_ctranslate2(args.checkpoint[0], threads=args.threads or 0)
    texts = [line.strip() for line in lines if line.strip()]
    best = iter(
        hypotheses[0]
        for hypotheses in translator.translate(
            texts, beam_size=args.beam, max_len=args.max_len, length_penalty=args.length_penalty,
            batch_size=args.batch_size,
        )
    )  # fmt: skip
    for line in lines:
        if not line.strip():
            if not args.json:
                print()
            continue
        hypothesis = next(best)
        if args.json:
            print(
                json.dumps(
                    {"source": line.strip(), "translation": hypothesis.text, "score": round(hypothesis.score, 4)}
                )
            )
        else:
            print(hypothesis.text)
    return 0
