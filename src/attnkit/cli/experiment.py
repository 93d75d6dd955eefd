"""``attnkit experiment NAME``: regenerate one results table of ``docs/results.md``; the experiments and their options
are :mod:`attnkit.experiments.registry`'s entries. Finished runs under ``--runs`` are reused and interrupted ones
resumed."""

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
  attnkit experiment NAME --help                              the options of one experiment
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``experiment``, with one sub-command per entry of :data:`attnkit.experiments.registry.EXPERIMENTS`."""
    from attnkit.experiments.registry import EXPERIMENTS

    parser = sub.add_parser(
        "experiment",
        help="regenerate a results table (docs/results.md)",
        description="Train the runs behind one table of docs/results.md (reusing finished ones, resuming "
        "interrupted ones), record the figures in docs/results/NAME.json and re-render docs/results.md. deploy trains "
        "nothing: it exports a finished Transformer to CTranslate2 (float32, int8) and scores and times all three.",
        epilog=EXAMPLES,
    )
    names = parser.add_subparsers(dest="name", metavar="NAME", required=True)
    for experiment in EXPERIMENTS.values():
        one = names.add_parser(
            experiment.name, help=experiment.help, description=experiment.help, epilog=_examples_of(experiment.name)
        )
        experiment.add_arguments(one)
        _add_shared_arguments(one)
        one.set_defaults(handler=run)


def _examples_of(name: str) -> str:
    """The lines of :data:`EXAMPLES` that run experiment ``name`` (with their continuation lines)."""
    lines, keep = [], False
    for line in EXAMPLES.splitlines()[1:]:
        if line.startswith("  attnkit "):
            keep = line.startswith(f"  attnkit experiment {name} ") or line == f"  attnkit experiment {name}"
        if keep:
            lines.append(line)
    return "examples:\n" + "\n".join(lines) + "\n" if lines else ""


def _add_shared_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the runs and the docs are, and how the runs compute (every experiment has these)."""
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


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit experiment NAME``: the experiment's entry runs it."""
    from pathlib import Path

    from attnkit.experiments.common import ExperimentPaths
    from attnkit.experiments.registry import EXPERIMENTS
    from attnkit.runtime.devices import resolve_device

    resolve_device(args.device)  # a device that is not there is refused before any run starts
    paths = ExperimentPaths(runs=Path(args.runs), docs=Path(args.docs))
    if not paths.docs.is_dir():
        raise FileNotFoundError(f"{paths.docs}: no such directory (run from the repository root, or pass --docs)")
    if EXPERIMENTS[args.name].run(args, paths):
        print(paths.docs / "results.md")
    return 0
