"""``attnkit models``: the trained models shipped inside attnkit (:mod:`attnkit.pretrained`), by name."""

from __future__ import annotations

import argparse
import json

EXAMPLES = """examples:
  attnkit models                                   one line per shipped model
  attnkit models --json                            a list of their cards (name, kind, data, metric, value, ...)
  attnkit evaluate --checkpoint r8 --data r8       re-check a card's figure (a shipped model's name is a checkpoint)
  attnkit predict --checkpoint r8 --text "oil prices rose"
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``models``."""
    parser = sub.add_parser(
        "models",
        help="list the trained models shipped with attnkit",
        description="List the trained models shipped inside attnkit: their names work wherever a checkpoint path "
        "does (--checkpoint NAME, attnkit.load('NAME')). Each card gives the test figure the model's own test "
        "re-computes, and the command that trained it.",
        epilog=EXAMPLES,
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list of the models' cards")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit models``."""
    from attnkit.pretrained import shipped_cards

    cards = shipped_cards()
    if args.json:
        print(json.dumps(cards, indent=2, ensure_ascii=False))
        return 0
    if not cards:
        print("no model is shipped")
        return 0
    rows = [("name", "kind", "data", "test figure", "size", "minutes")]
    rows += [
        (
            card["name"],
            card["kind"],
            card["data"],
            f"{card['metric']} {card['value']:.2f}",
            f"{card['size_bytes'] / 2**20:.1f} MiB",
            f"{card['training_minutes']:.1f}",
        )
        for card in cards
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print()
    for card in cards:
        print(f"{card['name']}: {card['command']}")
    return 0
