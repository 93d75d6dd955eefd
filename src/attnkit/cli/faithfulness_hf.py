"""``attnkit faithfulness --hf-model DIR``: the faithfulness tests on a Hugging Face sequence classifier saved in a
local directory (see :mod:`attnkit.explain.faithfulness.huggingface`)."""

from __future__ import annotations

import argparse
import json

__all__ = ["run_hf"]


def run_hf(args: argparse.Namespace) -> int:
    """Read the texts, load the model (never downloading), run the tests, print a table or JSON per text, and
    write the HTML report when ``--report`` is given."""
    from pathlib import Path

    from attnkit.tasks.options import read_texts

    texts = read_texts(args)  # before the model loads: a missing file is one line, nothing run
    if getattr(args, "precision", "fp32") != "fp32":
        raise ValueError("--precision: a Hugging Face model runs in float32 here (--precision fp32)")
    if args.report is not None and not Path(args.report).resolve().parent.is_dir():
        raise FileNotFoundError(f"--report {args.report}: its directory does not exist")
    from attnkit.explain.faithfulness import huggingface
    from attnkit.explain.faithfulness.table import format_document
    from attnkit.runtime.devices import resolve_device

    model, tokenizer = huggingface.load_local(args.hf_model)
    model.to(resolve_device(args.device))
    options = {"methods": args.methods, "erase": args.erase, "seed": args.seed, "steps": args.steps}
    if args.report is not None:
        from attnkit.explain.faithfulness.huggingface_report import write_hf_report

        _, results = write_hf_report(model, tokenizer, texts, args.report, **options)
    else:
        results = huggingface.faithfulness(model, tokenizer, texts, **options)
    for number, result in enumerate(results, start=1):
        if args.json:
            print(json.dumps(result.to_json(), ensure_ascii=False))
        else:
            print(format_document(result, number) + ("\n" if number < len(results) else ""))
    return 0
