"""The experiments ``attnkit experiment NAME`` runs, one entry each (layer 6; no torch at import): its name, one
line of help, the options of its sub-command and the function that runs it. The CLI builds a sub-command per entry
(``attnkit experiment --help`` lists them, ``attnkit experiment NAME --help`` shows one's options); adding an
experiment is one entry here. The sequence-to-sequence tables' names come from
:data:`attnkit.experiments.seq2seq.settings.EXPERIMENTS`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnkit.experiments.seq2seq.settings import EXPERIMENTS as SEQ2SEQ_EXPERIMENTS
from attnkit.tasks.options import positive_int

__all__ = ["EXPERIMENTS", "Experiment"]


@dataclass(frozen=True)
class Experiment:
    """One ``attnkit experiment NAME``: ``add_arguments`` adds its own options to its sub-command's parser;
    ``run(args, paths)`` runs it and returns whether it wrote ``docs/results.md`` (the command then prints that path)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Any], bool]


def _data(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--data", nargs="+", default=None, help=help)


def _only(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--only", nargs="+", default=None, help=help)


def _seeds(parser: argparse.ArgumentParser, default: int) -> None:
    parser.add_argument("--seeds", type=positive_int, default=None, help=f"seeds per run (default {default})")


def _classification_arguments(parser: argparse.ArgumentParser) -> None:
    _data(parser, "data sets (default: 20ng r8 r52 fine-foods)")
    _seeds(parser, 3)


def _classification(args: argparse.Namespace, paths) -> bool:
    from attnkit.experiments.classification import DATASETS, run_classification

    seeds = 3 if args.seeds is None else args.seeds
    run_classification(list(args.data or DATASETS), seeds, paths, threads=args.threads, device=args.device)
    return True


def _masking_arguments(parser: argparse.ArgumentParser) -> None:
    _data(parser, "one dataset (default fine-foods)")
    _seeds(parser, 5)
    _only(parser, "just these models (han, pooled)")


def _masking(args: argparse.Namespace, paths) -> bool:
    from attnkit.experiments.masking.run import MODELS, run_masking

    if args.data and len(args.data) != 1:
        raise ValueError(f"masking runs on one dataset, got --data {' '.join(args.data)}")
    data = args.data[0] if args.data else "fine-foods"
    models = tuple(args.only) if args.only else tuple(MODELS)
    seeds = 5 if args.seeds is None else args.seeds
    run_masking(data, seeds, paths, models=models, threads=args.threads, device=args.device)
    return True


def _faithfulness_arguments(parser: argparse.ArgumentParser) -> None:
    _data(parser, "data sets (default: fine-foods r8 r52 20ng digits cmudict dates)")
    _only(
        parser,
        "just these classifier models (han, pooled, pooled_bigru, pooled_transformer); refused with digits, cmudict, "
        "dates (one row each); without --data: the classifier data sets",
    )
    parser.add_argument(
        "--documents",
        type=int,
        default=None,
        help="faithfulness: measure exactly N sampled test documents per data set x model (default: 200 sampled, "
        "measured in a seeded random order for at most 8 minutes per row, so that a row stays within the "
        "10-minute target on one core; the interval shows what the smaller sample costs)",
    )
    parser.add_argument(
        "--uniform-only",
        action="store_true",
        help="only the uniform-attention column: train (or reuse) the twins of the classifier rows already in "
        "faithfulness.json and leave their other figures as they are",
    )
    parser.add_argument(
        "--checkpoint",
        default=None,
        metavar="RUN",
        help="--data dates: the Transformer to measure (default: the shipped dates-transformer)",
    )


def _faithfulness(args: argparse.Namespace, paths) -> bool:
    from attnkit.experiments.faithfulness import (
        CLASSIFIER_DATASETS,
        DOCUMENTS,
        default_datasets,
        run_faithfulness,
        run_uniform_only,
    )
    from attnkit.experiments.faithfulness.measure import MEASURE_MINUTES

    datasets = list(args.data or (CLASSIFIER_DATASETS if args.only else default_datasets()))
    models = tuple(args.only) if args.only else None
    if args.uniform_only and (args.checkpoint is not None or args.documents is not None):
        given = "--checkpoint" if args.checkpoint is not None else "--documents"
        raise ValueError(
            f"{given} does not apply to --uniform-only (it trains the uniform twins and measures nothing else)"
        )
    if args.uniform_only:
        run_uniform_only(datasets, paths, models=models, threads=args.threads, device=args.device)
        return True
    run_faithfulness(
        datasets,
        paths,
        models=models,
        documents=DOCUMENTS if args.documents is None else args.documents,
        threads=args.threads,
        device=args.device,
        checkpoint=args.checkpoint,
        minutes=MEASURE_MINUTES if args.documents is None else None,
    )
    return True


def _faithful_attention_arguments(parser: argparse.ArgumentParser) -> None:
    _data(parser, "data sets (default: fine-foods r8 r52 20ng)")
    _only(parser, "just these models (han, pooled_bigru)")
    _seeds(parser, 3)
    parser.add_argument("--recipes", nargs="+", default=None, help="just these recipes (default: all; see the docs)")
    parser.add_argument(
        "--stage",
        choices=("probe", "all"),
        default="all",
        help="probe: only stage 1 (one seed, validation); all: then confirm today's recipe, the chosen one and "
        "train classify's default (embedding-values-layer) on test with --seeds seeds (default)",
    )
    parser.add_argument(
        "--documents", type=positive_int, default=40, help="documents sampled for the faithfulness figures (40)"
    )


def _faithful_attention(args: argparse.Namespace, paths) -> bool:
    from attnkit.experiments.faithful_attention import RECIPES, ROWS, run_faithful_attention

    unknown = sorted(set(args.recipes or ()) - set(RECIPES))
    if unknown:
        raise ValueError(f"unknown recipe(s) {', '.join(unknown)}; choose from {', '.join(RECIPES)}")
    datasets = args.data or list(dict.fromkeys(data for data, _ in ROWS))
    rows = [key for key in ROWS if key[0] in datasets and (not args.only or key[1] in args.only)]
    if not rows:
        raise ValueError(f"no row for --data {' '.join(datasets)} --only {' '.join(args.only or ())}")
    recipes = ["today", *(name for name in args.recipes or RECIPES if name != "today")]
    run_faithful_attention(
        rows,
        paths,
        recipes=recipes,
        stage=args.stage,
        seeds=3 if args.seeds is None else args.seeds,
        documents=args.documents,
        threads=args.threads,
        device=args.device,
    )
    return True


def _seq2seq_arguments(parser: argparse.ArgumentParser) -> None:
    _only(parser, "just these runs or ensembles (by name; an ensemble brings its members)")


def _seq2seq(name: str) -> Callable[[argparse.Namespace, Any], bool]:
    def run(args: argparse.Namespace, paths) -> bool:
        from attnkit.experiments.seq2seq.run import run_seq2seq_experiment

        run_seq2seq_experiment(name, paths, threads=args.threads, runs=args.only, device=args.device)
        return True

    return run


def _deploy_arguments(parser: argparse.ArgumentParser) -> None:
    _data(parser, "the task the checkpoint was trained on (its section of the table)")
    parser.add_argument("--checkpoint", required=True, help="a Transformer run directory or checkpoint")
    parser.add_argument("--beam", type=positive_int, default=1, help="beam size (default 1: greedy)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="timed rounds per decoder (default 3)")


def _deploy(args: argparse.Namespace, paths) -> bool:
    from attnkit.experiments.deploy.run import run_deploy

    if not args.data or len(args.data) != 1:
        raise ValueError("deploy needs --data: the one task the checkpoint was trained on (e.g. cmudict)")
    run_deploy(args.checkpoint, args.data[0], paths, beam=args.beam, threads=args.threads or 1, rounds=args.rounds)
    return True


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """An experiment with no options of its own."""


def _report(args: argparse.Namespace, paths) -> bool:
    from attnkit.experiments.report import render_results

    print(render_results(paths))
    return False


EXPERIMENTS: dict[str, Experiment] = {
    experiment.name: experiment
    for experiment in (
        Experiment(
            "classification",
            "classifiers against TF-IDF on 20ng, r8, r52, fine-foods (hours on 2 cores)",
            _classification_arguments,
            _classification,
        ),
        Experiment("masking", "masked, unmasked and renormalised padding (one dataset)", _masking_arguments, _masking),
        Experiment(
            "faithfulness",
            "does the attention explain the predictions? (minutes per data set x model)",
            _faithfulness_arguments,
            _faithfulness,
        ),
        Experiment(
            "faithful-attention",
            "which recipe makes a classifier's attention the explanation? (probe on validation, confirm on test)",
            _faithful_attention_arguments,
            _faithful_attention,
        ),
        *(
            Experiment(name, setting.title, _seq2seq_arguments, _seq2seq(name))
            for name, setting in SEQ2SEQ_EXPERIMENTS.items()
        ),
        Experiment(
            "deploy",
            "native vs CTranslate2 float32 / int8 exports of a Transformer: score and decode time",
            _deploy_arguments,
            _deploy,
        ),
        Experiment("report", "re-render docs/results.md from docs/results/*.json", _no_arguments, _report),
    )
}
