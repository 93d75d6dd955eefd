"""What :func:`attnkit.load` returns, whatever the task: a **loaded model** (layer 5; no torch at import).

One word for one idea: every task's ready-to-use model is a :class:`LoadedModel` (its ``config`` and ``evaluate``);
the classifiers (:class:`~attnkit.tasks.classify.inference.Classifier`,
:class:`~attnkit.tasks.vision.inference.VisionModel`) are also :class:`Labeller` s (``predict`` and
``label_names``), and both seq2seq loaders — a checkpoint's
:class:`~attnkit.tasks.seq2seq.inference.LoadedSeq2Seq` and a CTranslate2 export's
:class:`~attnkit.tasks.seq2seq.ctranslate2.loaded.LoadedExport` — are :class:`Translator` s with the same
``translate``, so code written for one runs on the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Labeller", "LoadedModel", "Translator"]


@runtime_checkable
class LoadedModel(Protocol):
    """A trained model ready to use: its checkpoint's config, and its metrics on labelled inputs."""

    config: Any

    def evaluate(self, inputs: Any, targets: Any, **options: Any) -> dict[str, Any]:
        """The task's metrics of ``inputs`` (texts, images, sources) against ``targets`` (labels, references)."""
        ...


@runtime_checkable
class Labeller(LoadedModel, Protocol):
    """A loaded classifier: one label of ``label_names`` per input, with its probabilities and attention."""

    @property
    def label_names(self) -> list[str]: ...

    def predict(self, inputs: Any, *, batch_size: int = ...) -> list[Any]:
        """One prediction per input (a ``str`` of text is one input)."""
        ...


@runtime_checkable
class Translator(LoadedModel, Protocol):
    """A loaded seq2seq model: one ``Translation`` per source, in input order (a ``str`` is one source)."""

    def translate(self, texts: str | Sequence[str], **options: Any) -> list[Any]:
        """Greedy or beam decoding of ``texts``; both loaders take the same options (``beam_size``, ``batch_size``,
        ``length_penalty``, ``max_len``, ``need_weights``, ``num_hypotheses``: one signature, tested)."""
        ...
