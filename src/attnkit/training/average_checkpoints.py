"""One model from several checkpoints of one architecture: the element-wise mean of their weights (layer 5).

``python -m attnkit.training.average_checkpoints A B [C ...] --out DIR`` writes a checkpoint directory whose weights
are the mean of the given checkpoints' (a "uniform model soup", Wortsman et al. 2022). It pays when the checkpoints
share one starting point, e.g. two warm restarts of one shipped model with different seeds (``--init-from NAME
--seed S``): their weights then lie in one basin, and the mean is a single model (one forward, the size of one)
that often decodes better than either. Checkpoints trained from scratch apart do not average into anything useful;
the tool cannot tell, so validate the result (``attnkit evaluate --split valid``) before you keep it.

Each of ``A B ...`` is what ``--checkpoint`` takes (a checkpoint directory, a run directory meaning its ``best/``, or
a shipped model's name). They must hold the same model options, the same tokenisers (byte for byte) and the same
weight names and shapes; the first one's ``config.json`` and tokenisers are copied, and its metadata records the
sources.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["average_checkpoints", "main"]

_WEIGHTS = "model.safetensors"
_CONFIG = "config.json"


def average_checkpoints(sources: Sequence[str | Path], out: str | Path) -> Path:
    """Write the checkpoint whose weights are the mean of ``sources``' weights to ``out``; return ``out``.
    ``ValueError`` names the first source that differs in model options, tokenisers or weight names/shapes."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from attnkit.checkpointing import resolve_checkpoint
    from attnkit.training.averaging import average_weights

    if len(sources) < 2:
        raise ValueError(f"give at least two checkpoints to average, got {len(sources)}")
    out = Path(out)
    if out.exists():
        raise ValueError(f"--out {out} already exists: choose a new directory")
    folders = [resolve_checkpoint(source) for source in sources]
    configs = [json.loads((folder / _CONFIG).read_text(encoding="utf-8")) for folder in folders]
    first = folders[0]
    extra_files = sorted(p.name for p in first.iterdir() if p.suffix == ".json" and p.name.endswith("tokenizer.json"))
    for source, folder, config in zip(sources[1:], folders[1:], configs[1:], strict=True):
        for key in sorted(set(config) | set(configs[0])):
            if key != "attnkit" and config.get(key) != configs[0].get(key):
                raise ValueError(f"{source}: its config's {key!r} differs from {sources[0]}'s: not one architecture")
        for name in extra_files:
            if not (folder / name).is_file() or (folder / name).read_bytes() != (first / name).read_bytes():
                raise ValueError(f"{source}: its {name} differs from {sources[0]}'s: not one vocabulary")
    states = [load_file(str(folder / _WEIGHTS)) for folder in folders]
    try:
        averaged = average_weights(states)
    except ValueError as error:
        raise ValueError(f"the checkpoints' weights differ in names or shapes: {error}") from None
    with safe_open(str(first / _WEIGHTS), "pt") as handle:  # keeps what it records, e.g. tied weights' aliases
        metadata = handle.metadata() or {"format": "pt"}
    out.mkdir(parents=True)
    save_file(averaged, str(out / _WEIGHTS), metadata=metadata)
    for name in extra_files:
        shutil.copyfile(first / name, out / name)
    config = configs[0]
    stamp = dict(config.get("attnkit", {}))
    stamp["metadata"] = {"kind": "average", "sources": [str(source) for source in sources]}
    config["attnkit"] = stamp
    (out / _CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``python -m attnkit.training.average_checkpoints A B ... --out DIR``."""
    parser = argparse.ArgumentParser(
        prog="python -m attnkit.training.average_checkpoints",
        description="Average the weights of checkpoints of one architecture and vocabulary into one checkpoint.",
    )
    parser.add_argument("checkpoints", nargs="+", help="checkpoint or run directories, or shipped model names")
    parser.add_argument("--out", required=True, help="the new checkpoint directory (must not exist)")
    args = parser.parse_args(argv)
    try:
        out = average_checkpoints(args.checkpoints, args.out)
    except (ValueError, OSError) as error:
        print(f"attnkit: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out}: the mean of {len(args.checkpoints)} checkpoints' weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
