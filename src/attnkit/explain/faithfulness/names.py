"""The names the faithfulness tests answer to — methods, erasures, erasure sizes — without torch, so the command
line can offer them before anything heavy loads (layer 5)."""

from __future__ import annotations

__all__ = ["ERASURES", "METHODS", "PANEL_STEPS", "PERCENTS", "STEPS", "parse_methods"]

METHODS = (
    "attention",
    "rollout",
    "flow",
    "gradient_x_input",
    "integrated_gradients",
    "leave_one_out",
    "random",
)
ERASURES = ("delete", "mask", "unk")
PERCENTS = (1, 5, 10, 20, 50)
STEPS = 32  # integrated gradients' Gauss-Legendre nodes in attnkit faithfulness and the Python API
# ... and in explain --faithfulness's panel, which shows IG's completeness delta: 8 nodes integrate the HAN's paths to
# a delta of at most 2.8e-3 of p over 50 fine-foods reviews (median 1e-7; 32 nodes: 1.1e-7), at a quarter of the cost
PANEL_STEPS = 8


def parse_methods(text: str) -> list[str]:
    """``"attention,random"`` -> ``["attention", "random"]`` (in :data:`METHODS` order, without repeats); a
    ``ValueError`` names an unknown method and the choices."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    if not names:
        raise ValueError(f"no methods given; choose from {', '.join(METHODS)}")
    return [name for name in METHODS if name in set(names)]
