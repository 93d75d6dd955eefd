"""``attnkit explain``: a self-contained HTML report of what a trained model attended to.

The checkpoint's ``config.json`` says its kind, and the kind says what to explain:

| kind | input | report |
|---|---|---|
| ``classifier`` | ``--text`` (repeatable), ``--file`` (one text per line) or stdin | HAN: sentences and words shaded; pooled: tokens shaded, one row per head |
| ``seq2seq`` | ``--text`` (repeatable), ``--file`` or stdin | the source × target alignment; for the Transformer every layer and head and the encoder's attention rollout |
| ``vision`` | ``--index N`` (repeatable; test images of the built-in data) or ``--file`` (``.npy`` or a picture) | the image and each head's attention map laid over it |
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attnkit.cli.common import add_runtime_options, apply_runtime

SUPPORTED_KINDS = ("classifier", "vision", "seq2seq")

EXAMPLES = """examples:
  attnkit explain --checkpoint runs/ff/best --text "Stale and overpriced." --text "Lovely tea." --out report.html
  attnkit explain --checkpoint runs/ff/best --file reviews.txt --out report.html
  attnkit explain --checkpoint runs/g2p/best --text "attention" --text "padding" --out g2p.html
  attnkit explain --checkpoint runs/digits/best --index 0 --index 7 --out digits.html
  attnkit explain --checkpoint runs/digits/best --file my_digit.png --out mine.html
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``explain``."""
    parser = sub.add_parser(
        "explain",
        help="write an HTML report of what a model attended to",
        description="Explain a trained model's predictions: a self-contained HTML page (inline CSS and images, "
        f"no script, opens offline). Checkpoint kinds: {', '.join(SUPPORTED_KINDS)}.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--checkpoint", required=True, help="a checkpoint directory (RUN/best, or RUN itself)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text to explain (classifiers; repeatable)")
    source.add_argument(
        "--file", help="classifiers: one text per line; vision: a .npy array or a picture (PNG, ...) of images"
    )
    source.add_argument("--index", type=int, action="append", help="vision: a test image's index (repeatable)")
    parser.add_argument("--out", required=True, help="the HTML file to write")
    parser.add_argument("--title", default=None, help="the report's title")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit explain``."""
    apply_runtime(args)
    from attnkit.training.checkpoint import read_config, resolve_checkpoint

    checkpoint = resolve_checkpoint(args.checkpoint)
    kind = read_config(checkpoint).get("kind")
    if kind == "classifier":
        written = _explain_classifier(args, checkpoint)
    elif kind == "vision":
        written = _explain_vision(args, checkpoint)
    elif kind == "seq2seq":
        written = _explain_seq2seq(args, checkpoint)
    else:
        raise ValueError(
            f"{checkpoint}: attnkit explain cannot explain a checkpoint of kind {kind!r} yet; "
            f"supported kinds: {', '.join(SUPPORTED_KINDS)}"
        )
    print(f"report written to {written}")
    return 0


def _explain_classifier(args: argparse.Namespace, checkpoint: Path) -> Path:
    from attnkit.cli.predict import read_texts
    from attnkit.explain.reports import classifier_report
    from attnkit.training.classification import predict_texts
    from attnkit.training.classifier_run import load_classifier

    if args.index:
        raise ValueError("--index picks test images of a vision checkpoint; explain a classifier with --text or --file")
    model, encoder = load_classifier(checkpoint)
    predictions = predict_texts(model, encoder, read_texts(args))
    title = args.title or "What the classifier attended to"
    return classifier_report(predictions, encoder.config.label_names, args.out, title=title)


def _explain_vision(args: argparse.Namespace, checkpoint: Path) -> Path:
    from attnkit.data.images import read_image_file
    from attnkit.explain.html import write_report
    from attnkit.explain.sections import visual_section
    from attnkit.training.vision import load_test_images, load_vision, predict_images

    if args.text:
        raise ValueError("--text is for text classifiers; explain a vision checkpoint with --index N or --file F")
    model, config = load_vision(checkpoint)
    if args.file:
        images = read_image_file(args.file, config.image_shape)
        titles = [f"{Path(args.file).name}, image {number}" for number in range(1, len(images) + 1)]
        true_labels: list[str | None] = [None] * len(images)
    elif args.index:
        images, gold = load_test_images(config, args.index)
        titles = [f"{config.dataset} test image {index}" for index in args.index]
        true_labels = list(gold)
    else:
        raise ValueError("a vision checkpoint explains test images (--index N, repeatable) or an image file (--file F)")
    sections = []
    for prediction, heading, gold in zip(
        predict_images(model, images, config.label_names), titles, true_labels, strict=True
    ):
        sections.append(
            visual_section(
                prediction.image,
                prediction.attention,
                label_names=config.label_names,
                probabilities=[prediction.probabilities[name] for name in config.label_names],
                true_label=gold,
                title=heading,
            )
        )
    return write_report(args.out, sections, title=args.title or "What the visual attention model looked at")


def _explain_seq2seq(args: argparse.Namespace, checkpoint: Path) -> Path:
    import torch

    from attnkit.cli.predict import read_texts
    from attnkit.explain.html import write_report
    from attnkit.explain.sections import alignment_section, transformer_section
    from attnkit.training.seq2seq import translate_texts
    from attnkit.training.seq2seq_inference import load_seq2seq

    if args.index:
        raise ValueError(
            "--index picks test images of a vision checkpoint; explain a seq2seq model with --text or --file"
        )
    loaded = load_seq2seq(checkpoint)
    texts = read_texts(args)
    translations = translate_texts(
        loaded.model, loaded.source_tokenizer, loaded.target_tokenizer, texts, need_weights=True
    )
    sections = []
    for number, (text, translation) in enumerate(zip(texts, translations, strict=True), start=1):
        source_tokens = loaded.source_tokenizer.tokens(text)
        target_tokens = [loaded.target_tokenizer.id_to_token(i) for i in translation.token_ids]
        heading = f"{number}. {text} → {translation.text}"
        weights = translation.attention  # RNN [T, S]; Transformer [T, L, H, S]
        if weights.dim() == 2:
            sections.append(alignment_section(weights, source_tokens, target_tokens, title=heading))
            continue
        # the Transformer: the last layer's head-averaged alignment, then every layer and head
        sections.append(alignment_section(weights[:, -1].mean(1), source_tokens, target_tokens, title=heading))
        source_ids = torch.tensor([loaded.source_tokenizer.encode(text)])
        with torch.no_grad():
            _, encoder_layers = loaded.model.encode(
                source_ids, torch.ones_like(source_ids, dtype=torch.bool), need_weights=True
            )
        sections.append(
            transformer_section(
                source_tokens,
                target_tokens,
                encoder_layers=[layer[0] for layer in encoder_layers],  # [H, S, S]
                cross_layers=[weights[:, layer].transpose(0, 1) for layer in range(weights.shape[1])],  # [H, T, S]
                title=f"{number}. every layer and head",
            )
        )
    return write_report(args.out, sections, title=args.title or "What the translation model attended to")
