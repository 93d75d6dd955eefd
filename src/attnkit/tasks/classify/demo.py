"""``attnkit demo``: the main job on the built-in data, end to end, in a few minutes on 2 CPU cores.

Trains a hierarchical attention network on the fine-food reviews, prints its test accuracy beside a TF-IDF +
logistic-regression baseline trained in the same run, shows a few predictions with their most-attended
sentence and words, writes an HTML report of what the model attended to, and checks it: erasing each report
document's 3 most-attended words against 3 random ones, and how much of what integrated gradients find the
attention finds (with train classify's faithful recipe, attention x each word's part of the logit).

A command of the classify task (``TaskSpec.commands``; layer 5, torch is imported only when it runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from attnkit.tasks.options import add_runtime_options, positive_int, valid_fraction

REPORT_TITLE = "attnkit demo: what the HAN attended to"


EXAMPLES = """examples:
  attnkit demo
  attnkit demo --epochs 3 --out /tmp/demo
  attnkit demo --ensemble 3     three HANs, one ensemble (three times the training)
  attnkit demo --embeddings random --attend all     no pre-trained vectors, attention over every token
  attnkit demo --attention-values states     attention over the BiGRUs' states (before the faithful default)"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``demo``."""
    parser = sub.add_parser(
        "demo",
        help="train and explain a HAN on fine-food reviews (a few minutes)",
        description=" ".join(line.strip() for line in __doc__.splitlines()[2:7]),
        epilog=EXAMPLES,
    )
    parser.add_argument("--data", default="fine-foods", help="a built-in data set name (default: fine-foods)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop each HAN's training after this many minutes (default: none, so the same command trains the same "
        "model on any machine: --epochs epochs on a cosine schedule, about 2.5 minutes on one core here)",
    )
    parser.add_argument(
        "--valid-fraction",
        type=valid_fraction,
        default=0.0,
        help="share of the training reviews carved for validation (default 0: the HAN trains on every training "
        "review, as the baseline does, and keeps the average of its last 3 epochs, the recipe chosen on "
        "validation splits in docs/results/classification_notes.md); e.g. 0.1 keeps the best validated epoch",
    )
    _add_recipe_options(parser)
    parser.add_argument(
        "--ensemble",
        type=positive_int,
        default=1,
        help="train N HANs (seeds SEED..SEED+N-1; with --valid-fraction, one validation split: SEED's) and score "
        "them as one, their probabilities averaged, beside the first alone; costs N trainings (default 1)",
    )
    parser.add_argument("--out", default="runs/demo", help="checkpoint and report directory (default runs/demo)")
    parser.add_argument("--examples", type=int, default=4, help="predictions to show (default 4)")
    parser.add_argument(
        "--report-documents",
        type=int,
        default=50,
        help="test documents in the HTML report, whose top-attended words are counted (default 50)",
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="use only the first N train and N/4 test documents (a smoke run)"
    )
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def _add_recipe_options(parser: argparse.ArgumentParser) -> None:
    """The demo HAN's options that change what it is: its embeddings and what its attention reads."""
    parser.add_argument(
        "--embeddings",
        default="glove",
        metavar="random|word2vec|fasttext|glove|PATH",
        help="where the HAN's word embeddings start (default glove: GloVe 6B 50d; see attnkit train classify)",
    )
    parser.add_argument(
        "--attend",
        choices=["all", "content"],
        default="content",
        help="what the word attention may attend to: content words only (default: not stop words or "
        "punctuation; the GRU still reads every word), or all tokens",
    )
    parser.add_argument(
        "--attention-values",
        choices=["embeddings", "states"],
        default="embeddings",
        help="what the attention averages: embeddings (default: train classify's faithful recipe, each word's own "
        "values through a per-word layer, so that attention x each word's part of the logit is the explanation) or "
        "states (the BiGRUs', as the demo was before)",
    )


def _top_words(words: list[str], weights: list[float], k: int = 3) -> str:
    ranked = sorted(zip(weights, words, strict=True), reverse=True)[:k]
    return ", ".join(f"{word} ({weight:.2f})" for weight, word in ranked)


def _ensemble_accuracies(data, reports, args: argparse.Namespace) -> tuple[float | None, float]:
    """The demo's HANs as one ensemble: its accuracy (percent) on their shared validation split (None without one)
    and on test."""
    from attnkit.tasks.classify.ensemble import ClassifierEnsemble
    from attnkit.tasks.classify.inference import load_classifier
    from attnkit.tasks.classify.training import validation_split

    members = [load_classifier(r.checkpoint, device=args.device, precision=args.precision) for r in reports]
    ensemble = ClassifierEnsemble(members)
    names = data.label_names
    test_report = ensemble.evaluate(data.test_texts, [names[label] for label in data.test_labels])
    _, valid = validation_split(data, args.valid_fraction, args.seed)  # the members' shared split
    if not valid:
        return None, test_report["accuracy"]
    valid_report = ensemble.evaluate([data.train_texts[i] for i in valid], [names[data.train_labels[i]] for i in valid])
    return valid_report["accuracy"], test_report["accuracy"]


def _percent(value: float | None) -> str:
    """``80.25%``, or ``–`` for a figure there is none of (no validation split)."""
    return "–" if value is None else f"{value:.2f}%"


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit demo``."""
    from attnkit.data.classification import load_data_set, subset
    from attnkit.tasks.classify.baselines import tfidf_logreg_accuracy
    from attnkit.tasks.classify.training import train_classifier

    started = time.perf_counter()
    data = load_data_set(args.data)
    if args.limit:
        data = subset(data, args.limit, max(args.limit // 4, 1))
    print(
        f"{args.data}: {len(data.train_texts)} training and {len(data.test_texts)} test documents, "
        f"classes {', '.join(data.label_names)}"
    )
    baseline = tfidf_logreg_accuracy(
        data.train_texts, data.train_labels, data.test_texts, data.test_labels, seed=args.seed
    )
    print(f"TF-IDF + logistic regression: test accuracy {100 * baseline:.2f}%")

    config, fit_config = _recipe(args)
    reports = [
        train_classifier(
            data,
            config,
            dataclasses.replace(fit_config, seed=args.seed + member),
            out_dir=Path(args.out) / f"member{member}" if member else args.out,
            valid_fraction=args.valid_fraction,
            valid_seed=args.seed,
            batch_size=32,
            device=args.device,
        )
        for member in range(args.ensemble)
    ]
    report = reports[0]

    _print_accuracies(args, data, baseline, reports, fit_config)
    _explain(args, data, report)
    print(f"demo finished in {(time.perf_counter() - started) / 60:.1f} min")
    return 0


def _recipe(args: argparse.Namespace):
    """The HAN's config and its ``FitConfig``: the recipe chosen on fine-foods' validation splits
    (docs/results/classification_notes.md)."""
    from attnkit.tasks.classify.config import ClassifierConfig, default_embed_dim
    from attnkit.tasks.classify.recipe import FAITHFUL_VALUE_LAYER
    from attnkit.training.loop import FitConfig

    config = ClassifierConfig(
        model="han",
        embed_dim=default_embed_dim(args.embeddings) if args.embeddings != "random" else 100,
        hidden=50,
        dropout=0.5,
        embeddings=args.embeddings,
        attend=args.attend,
        attention_values=args.attention_values,
        value_layer=FAITHFUL_VALUE_LAYER if args.attention_values == "embeddings" else 0,
    )
    fit_config = FitConfig(
        epochs=args.epochs,
        lr=1e-3,
        schedule="cosine",
        warmup_steps=100,
        average_last=3,
        weight_decay=0.01,
        patience=None,
        seed=args.seed,
        progress=not args.no_progress,
        max_minutes=args.max_minutes,
        precision=args.precision,
    )
    return config, fit_config


def _print_accuracies(args: argparse.Namespace, data, baseline: float, reports, fit_config) -> None:
    """The table of test accuracies (the baseline, each HAN, their ensemble) and how long the HANs trained."""
    print()
    print(f"{'model':<40}{'validation':>11}{'test accuracy':>15}")
    print(f"{'TF-IDF + logistic regression':<40}{'':>11}{100 * baseline:>14.2f}%")
    for member, trained in enumerate(reports):
        name = "HAN (attnkit)" if args.ensemble == 1 else f"HAN (attnkit), seed {args.seed + member}"
        valid = trained.fit.best_metrics.get("accuracy")
        print(f"{name:<40}{_percent(valid):>11}{trained.test_metrics['accuracy']:>14.2f}%")
    if args.ensemble > 1:
        valid, test = _ensemble_accuracies(data, reports, args)
        print(f"{f'ensemble of the {args.ensemble} HANs':<40}{_percent(valid):>11}{test:>14.2f}%")
    documents = reports[0].details["train_documents"]
    print(
        f"(the HAN{'s' if args.ensemble > 1 else ''} trained on {documents} reviews; the baseline on {len(data.train_texts)})"
    )
    minutes = sum(trained.train_seconds for trained in reports) / 60
    epochs = ", ".join(str(trained.fit.best_epoch) for trained in reports)
    kept = f"kept the mean of the last {fit_config.average_last} epochs' weights, epoch"
    kept = "best epoch" if args.valid_fraction else kept
    plural = "s" if args.ensemble > 1 else ""
    print(f"HAN{plural} trained {minutes:.1f} min, {kept}{plural} {epochs}")
    if args.ensemble > 1:
        print(f"(what follows explains the seed-{args.seed} HAN alone: an ensemble has no one attention to show)")


def _explain(args: argparse.Namespace, data, report) -> None:
    """What the first HAN attended to: a few test predictions, the HTML report, the faithfulness summary."""
    from attnkit.explain.faithfulness.results import comprehensiveness_line, summary_line
    from attnkit.tasks.classify.attended_words import stop_word_share
    from attnkit.tasks.classify.explain import classifier_report
    from attnkit.tasks.classify.inference import load_classifier

    classifier = load_classifier(report.checkpoint, device=args.device, precision=args.precision)
    predictions = classifier.predict(data.test_texts[: max(args.examples, args.report_documents)])
    share = stop_word_share(predictions[: args.report_documents], k=3)
    print(
        f"stop words and punctuation among each report document's 3 most-attended words: {100 * share:.0f}% "
        f"(mean over {min(args.report_documents, len(predictions))} documents; scikit-learn's English stop words "
        "without negations such as 'not')"
    )
    print()
    for prediction, gold in zip(predictions[: args.examples], data.test_labels, strict=False):
        best = max(range(len(prediction.sentence_weights)), key=prediction.sentence_weights.__getitem__, default=None)
        print(
            f"predicted {prediction.label} ({prediction.probabilities[prediction.label]:.2f}), "
            f"true {data.label_names[gold]}: {prediction.text[:90]!r}"
        )
        if best is not None:
            sentence = " ".join(prediction.sentences[best])
            print(f"  most-attended sentence ({prediction.sentence_weights[best]:.2f}): {sentence[:100]}")
            print(f"  its top words: {_top_words(prediction.sentences[best], prediction.word_weights[best])}")
    shown = predictions[: args.report_documents]
    gold = [data.label_names[label] for label in data.test_labels[: len(shown)]]
    options = {"title": REPORT_TITLE, "true_labels": gold, "recipe": classifier.config.recipe()}
    report_path = classifier_report(shown, classifier.label_names, Path(args.out) / "report.html", **options)
    print(f"\nreport of what the model attended to: {report_path}")
    own = ["attention_contribution"] if classifier.config.attention_values == "embeddings" else []
    methods = ["attention", *own, "integrated_gradients", "random"]
    tests = classifier.faithfulness([p.text for p in shown], methods=methods, seed=args.seed)
    print(summary_line(tests))
    for method in [*own, "attention"]:  # the model's own explanation first, then the weights alone
        print(comprehensiveness_line(tests, method))
