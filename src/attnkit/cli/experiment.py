"""``attnkit experiment NAME``: regenerate one results table of ``docs/results.md`` (see
:mod:`attnkit.experiments`). Finished runs under ``--runs`` are reused and interrupted ones resumed."""

from __future__ import annotations

import argparse

from attnkit.tasks.options import DEVICE_HELP, positive_int

EXAMPLES = """examples:
  attnkit experiment classification --seeds 3                 20ng, r8, r52, fine-foods (hours on 2 cores)
  attnkit experiment classification --data r8 --seeds 3
  attnkit experiment masking --data fine-foods --seeds 5
  attnkit experiment faithfulness --data fine-foods r8 --threads 1
                                       does the attention explain the predictions? (minutes per data set x model)
  attnkit experiment g2p
  attnkit experiment bible
  attnkit experiment luong
  attnkit experiment deploy --data cmudict --checkpoint runs/experiments/g2p/transformer --threads 1
                                       native vs CTranslate2 float32 / int8 exports: score and decode time
  attnkit experiment report                                   re-render docs/results.md from docs/results/*.json
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``experiment``."""
    parser = sub.add_parser(
        "experiment",
        help="regenerate a results table (docs/results.md)",
        description="Train the runs behind one table of docs/results.md (reusing finished ones, resuming "
        "interrupted ones), record the figures in docs/results/NAME.json and re-render docs/results.md. deploy trains "
        "nothing: it exports a finished Transformer to CTranslate2 (float32, int8) and scores and times all three.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "name", choices=["classification", "masking", "faithfulness", "g2p", "bible", "luong", "deploy", "report"]
    )
    parser.add_argument(
        "--data",
        nargs="+",
        default=None,
        help="classification: datasets (default: 20ng r8 r52 fine-foods); faithfulness: datasets (default: "
        "fine-foods r8 r52 20ng); masking: one dataset (default fine-foods); deploy: the task the checkpoint was trained on (its section of the table)",
    )
    parser.add_argument(
        "--seeds", type=positive_int, default=None, help="classification (default 3), masking (default 5)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=None,
        help="g2p/bible/luong: just these runs or ensembles (by name; an ensemble brings its members); masking: just "
        "these models (han, pooled); faithfulness: just these models (han, pooled, pooled_bigru, pooled_transformer)",
    )
    parser.add_argument(
        "--documents",
        type=int,
        default=None,
        help="faithfulness: test documents sampled per data set x model (default 200)",
    )
    deploy = parser.add_argument_group("deploy")
    deploy.add_argument("--checkpoint", default=None, help="deploy: a Transformer run directory or checkpoint")
    deploy.add_argument("--beam", type=positive_int, default=1, help="deploy: beam size (default 1: greedy)")
    deploy.add_argument("--rounds", type=positive_int, default=3, help="deploy: timed rounds per decoder (default 3)")
    parser.add_argument("--runs", default="runs/experiments", help="where the runs go (default: runs/experiments)")
    parser.add_argument("--docs", default="docs", help="the docs directory to write (default: docs)")
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch CPU threads per run (default: torch's); deploy: threads of every decoder (default 1)",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help=f"{DEVICE_HELP}. Where the runs train, not what they are: a finished run is reused whatever its device "
        "(metrics.json records it). Precision is part of each run's recipe (its --precision option), not of this "
        "command",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit experiment``."""
    from pathlib import Path

    from attnkit.experiments.common import ExperimentPaths
    from attnkit.training.precision import resolve_device

    resolve_device(args.device)  # a device that is not there is refused before any run starts
    paths = ExperimentPaths(runs=Path(args.runs), docs=Path(args.docs))
    if not paths.docs.is_dir():
        raise FileNotFoundError(f"{paths.docs}: no such directory (run from the repository root, or pass --docs)")
    if args.only and args.name not in ("g2p", "bible", "luong", "masking", "faithfulness"):
        raise ValueError("--only is for the masking, faithfulness, g2p, bible and luong experiments")
    if args.documents is not None and args.name != "faithfulness":
        raise ValueError("--documents is for the faithfulness experiment")
    if (args.checkpoint is not None) != (args.name == "deploy"):
        raise ValueError("deploy needs --checkpoint, and --checkpoint is for deploy only")
    if args.name == "classification":
        from attnkit.experiments.classification import DATASETS, run_classification

        run_classification(
            list(args.data or DATASETS),
            3 if args.seeds is None else args.seeds,
            paths,
            threads=args.threads,
            device=args.device,
        )
    elif args.name == "masking":
        from attnkit.experiments.masking import MODELS, run_masking

        if args.data and len(args.data) != 1:
            raise ValueError(f"masking runs on one dataset, got --data {' '.join(args.data)}")
        data = args.data[0] if args.data else "fine-foods"
        models = tuple(args.only) if args.only else tuple(MODELS)
        run_masking(
            data,
            5 if args.seeds is None else args.seeds,
            paths,
            models=models,
            threads=args.threads,
            device=args.device,
        )
    elif args.name == "faithfulness":
        from attnkit.experiments.faithfulness import DATASETS, DOCUMENTS, run_faithfulness

        run_faithfulness(
            list(args.data or DATASETS),
            paths,
            models=tuple(args.only) if args.only else None,
            documents=DOCUMENTS if args.documents is None else args.documents,
            threads=args.threads,
            device=args.device,
        )
    elif args.name == "deploy":
        from attnkit.experiments.deploy import run_deploy

        if not args.data or len(args.data) != 1:
            raise ValueError("deploy needs --data: the one task the checkpoint was trained on (e.g. cmudict)")
        run_deploy(args.checkpoint, args.data[0], paths, beam=args.beam, threads=args.threads or 1, rounds=args.rounds)
    elif args.name == "report":
        from attnkit.experiments.report import render_results

        print(render_results(paths))
        return 0
    else:
        from attnkit.experiments.seq2seq import run_seq2seq_experiment

        if args.data:
            raise ValueError(f"--data is for classification and masking; {args.name} has its own task")
        run_seq2seq_experiment(args.name, paths, threads=args.threads, runs=args.only, device=args.device)
    print(paths.docs / "results.md")
    return 0
