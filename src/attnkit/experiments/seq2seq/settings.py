"""What each sequence-to-sequence results table trains: the task, the named runs (``attnkit train seq2seq``
options each) and the ensembles decoded from them (see :mod:`attnkit.experiments.seq2seq`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["EXPERIMENTS", "LENGTH_BUCKETS", "Seq2SeqExperiment", "slug"]

_BIBLE_FIT = "--batch-size 128 --lr 2e-3 --epochs 50 --patience 4 --lr-decay 0.5 --max-minutes 60"
_LUONG_FIT = "--model rnn --batch-size 64 --lr 1e-3 --epochs 50 --patience 4 --lr-decay 0.5 --max-minutes 20"


@dataclass(frozen=True)
class Seq2SeqExperiment:
    """One results table: a task and the named runs compared on it (``attnkit train seq2seq`` options each)."""

    name: str
    data: str
    title: str
    runs: dict[str, str]
    beam: int = 1  # > 1: the best checkpoint is also decoded with this beam on test (recorded as test_beam)
    processes: dict[str, int] = field(default_factory=dict)  # run -> processes under torchrun (default 1)
    # name -> member runs, decoded together (Seq2SeqEnsemble) once every member has finished
    ensembles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a classical peer trained on the same training split and scored by the same code ("phonetisaurus")
    peer: str | None = None

    def train_argv(self, run: str, out: Path) -> list[str]:
        """The ``attnkit`` arguments of one run (``--resume``: an interrupted run continues where it stopped)."""
        options = shlex.split(self.runs[run])
        return ["train", "seq2seq", "--data", self.data, *options, "--seed", "0", "--out", str(out), "--resume"]


EXPERIMENTS: dict[str, Seq2SeqExperiment] = {
    "g2p": Seq2SeqExperiment(
        "g2p",
        "cmudict",
        "Grapheme-to-phoneme on CMUdict (12,000 held-out words)",
        beam=5,
        peer="phonetisaurus",
        runs={
            "transformer": "--model transformer --dim 128 --ff-dim 512 --heads 4 --batch-size 64 --lr 1e-3 "
            "--epochs 200 --patience 6 --lr-decay 0.5 --label-smoothing 0.1 --max-minutes 60",
            "rnn, global concat, 60 min": "--model rnn --attention luong-concat --batch-size 64 --lr 1e-3 --epochs 200 "
            "--patience 6 --lr-decay 0.5 --max-minutes 60",
            # both cores on one run: 64 words per process and step (128 in all), twice the rate, a short warm-up
            "rnn, global concat, 2 processes": "--model rnn --attention luong-concat --batch-size 64 --lr 2e-3 "
            "--warmup-steps 300 --epochs 200 --patience 6 --lr-decay 0.5 --max-minutes 60",
            # the modern recipe: warm-up, cosine annealing over the whole time budget (so the rate reaches its
            # floor as the budget ends, instead of plateau halving stalling the run), the last 3 epochs averaged
            "rnn, global concat, cosine, 100 min": "--model rnn --attention luong-concat --batch-size 64 --lr 2e-3 "
            "--warmup-steps 500 --schedule cosine --min-lr 1e-5 --average-last 3 --epochs 1000 --patience 1000 "
            "--max-minutes 100",
            "transformer, cosine, 100 min": "--model transformer --dim 128 --ff-dim 512 --heads 4 --batch-size 64 "
            "--lr 1e-3 --warmup-steps 2000 --schedule cosine --min-lr 1e-5 --average-last 3 --label-smoothing 0.1 "
            "--epochs 1000 --patience 1000 --max-minutes 100",
            # the cosine GRU with the 3-hour budget on a core of its own; the peak rate is the plateau
            # row's 1e-3 (the 100-minute cosine run at 2e-3 was no better per epoch than that row)
            "rnn, global concat, cosine, 180 min": "--model rnn --attention luong-concat --batch-size 64 --lr 1e-3 "
            "--warmup-steps 500 --schedule cosine --min-lr 1e-5 --average-last 3 --epochs 1000 --patience 1000 "
            "--max-minutes 180",
        },
        processes={"rnn, global concat, 2 processes": 2},
        # one-core runs trained side by side: each ensemble costs its members' minutes on the two cores
        ensembles={
            "ensemble: rnn, global concat, 60 min + transformer": ("rnn, global concat, 60 min", "transformer"),
            "ensemble: rnn cosine + transformer cosine, 100 min": (
                "rnn, global concat, cosine, 100 min",
                "transformer, cosine, 100 min",
            ),
        },
    ),
    "bible": Seq2SeqExperiment(
        "bible",
        "bible-en-es",
        "Bible EN→ES (King James → Reina-Valera 1909), held-out chapters",
        {
            "none": f"--model rnn --attention none {_BIBLE_FIT}",
            "luong-general": f"--model rnn --attention luong-general {_BIBLE_FIT}",
            "bahdanau": f"--model rnn --attention bahdanau {_BIBLE_FIT}",
            # Adam without a warm-up left the Transformer behind (BLEU 0.3 after 8 minutes at lr 2e-3)
            "transformer": "--model transformer --batch-size 128 --lr 1e-3 --warmup-steps 600 --label-smoothing 0.1 "
            "--epochs 50 --patience 4 --lr-decay 0.5 --max-minutes 60",
            # Luong's local-p (general score, D = 10: 21 of a verse's ~30 source words) against the luong-general
            # row above: the same recipe and budget, the window the only change
            "local-p (general)": f"--model rnn --attention local-p {_BIBLE_FIT}",
            # the 60-minute Transformer finished its warm-up in epoch 3 of 3.2: batches of 64 (twice the updates
            # per epoch), warm-up, then cosine annealing over a 2-hour budget on a core of its own
            "transformer, cosine, 120 min": "--model transformer --batch-size 64 --lr 1e-3 --warmup-steps 1000 "
            "--schedule cosine --min-lr 1e-5 --label-smoothing 0.1 --epochs 1000 --patience 1000 --max-minutes 120",
        },
    ),
    "luong": Seq2SeqExperiment(
        "luong",
        "cmudict",
        "Luong et al. 2015's attention variants (GRU encoder-decoder, CMUdict)",
        {
            "global dot": f"--attention luong-dot {_LUONG_FIT}",
            "global general": f"--attention luong-general {_LUONG_FIT}",
            "global concat": f"--attention luong-concat {_LUONG_FIT}",
            "local-m (general)": f"--attention local-m {_LUONG_FIT}",
            "local-p (general)": f"--attention local-p {_LUONG_FIT}",
        },
    ),
}
# Source-length buckets (English words) for BLEU by length: (low, high) inclusive.
LENGTH_BUCKETS = ((1, 15), (16, 25), (26, 35), (36, 45), (46, 1000))


def slug(run: str) -> str:
    """A run's directory name: its name with anything but letters, digits and ``-`` made ``-``."""
    return "".join(c if c.isalnum() or c == "-" else "-" for c in run).strip("-")
