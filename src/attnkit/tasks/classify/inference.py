"""A trained classifier, ready to use: what ``attnkit.load``, ``evaluate``, ``predict`` and ``explain`` get for a
``classifier`` checkpoint (layer 5).

    classifier = load_classifier("runs/ff")              # RUN or RUN/best; device="auto", precision="fp32"
    classifier.predict(["Stale and overpriced."])[0].label
    classifier.evaluate(texts, label_names)["accuracy"]

Shape glossary:
    B  documents   C  classes
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.checkpointing import (
    CONFIG_FILE,
    CheckpointError,
    load_model_weights,
    read_config_of_kind,
    resolve_checkpoint,
)
from attnkit.data.classify.tokenization import TextTokenizer
from attnkit.data.inputs import as_texts
from attnkit.runtime.devices import autocast, device_of, ready_for_inference, to_host
from attnkit.tasks.classify.config import KIND, ClassifierConfig, build_classifier
from attnkit.tasks.classify.encoding import Prediction, TextEncoder, forward_batch
from attnkit.tasks.classify.objective import evaluate_encoded

__all__ = ["Classifier", "Prediction", "labelled_texts", "load_classifier", "predict_texts"]


def labelled_texts(
    texts: Sequence[str], labels: Sequence[str], label_ids: Callable[[Sequence[str]], list[int]]
) -> tuple[list[str], list[int]]:
    """The texts to evaluate (checked by :func:`~attnkit.data.inputs.as_texts`) and the class ids of their gold
    ``labels``."""
    texts = as_texts(texts)
    if len(labels) != len(texts):
        raise ValueError(f"texts has {len(texts)} items but labels has {len(labels)}")
    if not texts:
        raise ValueError("nothing to evaluate: no texts")
    return texts, label_ids(labels)


@dataclass
class Classifier:
    """A trained classifier (in eval mode) and its text encoder, run under autocast in ``precision``."""

    model: nn.Module
    encoder: TextEncoder
    precision: str = "fp32"

    @property
    def device(self) -> torch.device:
        """Where the model runs."""
        return device_of(self.model)

    @property
    def config(self) -> ClassifierConfig:
        """The checkpoint's config (label names, model family, preprocessing)."""
        return self.encoder.config

    @property
    def label_names(self) -> list[str]:
        """The classes, in the order of the model's outputs."""
        return list(self.encoder.config.label_names)

    def predict(self, texts: str | Sequence[str], *, batch_size: int = 32) -> list[Prediction]:
        """Each text's label, class probabilities and attention weights (see :func:`predict_texts`); a ``str`` is
        one text (one prediction), an empty sequence no texts (``[]``)."""
        return predict_texts(self.model, self.encoder, texts, batch_size=batch_size, precision=self.precision)

    def faithfulness(
        self,
        texts: str | Sequence[str],
        *,
        methods: Sequence[str] | None = None,
        erase: str = "delete",
        seed: int = 0,
        steps: int = 32,
    ) -> list:
        """Does the attention explain each prediction? One ``DocumentFaithfulness`` per text, texts taken as
        :meth:`predict` takes them (:mod:`attnkit.tasks.classify.faithfulness`)."""
        from attnkit.explain.faithfulness.methods import DEFAULT_METHODS
        from attnkit.tasks.classify.faithfulness import classifier_faithfulness

        return classifier_faithfulness(
            self, texts, methods=methods or DEFAULT_METHODS, erase=erase, seed=seed, steps=steps
        )

    def evaluate(self, texts: Sequence[str], labels: Sequence[str], *, batch_size: int = 64) -> dict[str, Any]:
        """What ``attnkit evaluate`` prints, on ``texts`` with their gold label names: ``accuracy`` (percent),
        mean ``loss``, ``count``, and the per-class table of :func:`attnkit.tasks.classify.report.classification_report`."""
        from attnkit.tasks.classify.report import classification_report

        texts, gold = labelled_texts(texts, labels, self.label_ids)
        metrics = evaluate_encoded(
            self.model, self.encoder, texts, gold, batch_size=batch_size, precision=self.precision
        )
        report = classification_report(gold, self.predict_ids(texts, batch_size=batch_size), self.label_names)
        return {**report, "accuracy": metrics["accuracy"], "loss": metrics["loss"], "count": int(metrics["count"])}

    def label_ids(self, labels: Sequence[str]) -> list[int]:
        """The class ids of label names (refusing names that are not the checkpoint's classes)."""
        index = {name: i for i, name in enumerate(self.label_names)}
        unknown = sorted(set(labels) - set(index))
        if unknown:
            raise ValueError(f"labels {unknown[:5]} are not among the checkpoint's classes ({', '.join(index)})")
        return [index[label] for label in labels]

    def predict_ids(self, texts: Sequence[str], *, batch_size: int = 64) -> list[int]:
        """The predicted class id of each text, in input order (batches of similar lengths, no attention kept)."""
        return self.probabilities(texts, batch_size=batch_size).argmax(-1).tolist()

    @torch.no_grad()
    def probabilities(self, texts: Sequence[str], *, batch_size: int = 64) -> torch.Tensor:
        """Each text's class probabilities ``[N, C]`` (float32, on the CPU, in input order; no attention kept)."""
        items = self.encoder.encode(as_texts(texts))
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        collate = self.encoder.collate()
        result = torch.zeros(len(items), len(self.label_names))  # [N, C]
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            batch = collate([(items[i], None) for i in chunk]).to(self.device)
            with autocast(self.device, self.precision):
                logits = forward_batch(self.model, batch).logits  # [B, C]
            result[chunk] = torch.softmax(logits.float(), dim=-1).cpu()
        return result


def load_classifier(
    checkpoint: str | Path, *, device: str | torch.device = "auto", precision: str = "fp32"
) -> Classifier:
    """Rebuild a trained classifier and its text encoder from a checkpoint (a run directory means its ``best/``; a
    shipped model's name means that model), ready on ``device`` to run in ``precision``."""
    checkpoint = resolve_checkpoint(checkpoint)
    values = read_config_of_kind(checkpoint, KIND)
    try:
        config = ClassifierConfig.from_dict(values)
        tokenizer = TextTokenizer.load(checkpoint)
        model = build_classifier(config, tokenizer.vocab_size)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{checkpoint / CONFIG_FILE}: {error}") from error
    load_model_weights(model, checkpoint)
    return Classifier(ready_for_inference(model, device, precision), TextEncoder(config, tokenizer), precision)


@torch.no_grad()
def predict_texts(
    model: nn.Module, encoder: TextEncoder, texts: str | Sequence[str], *, batch_size: int = 32, precision: str = "fp32"
) -> list[Prediction]:
    """Predict labels for ``texts`` and collect the attention weights for explanation (under autocast in
    ``precision``); a ``str`` is one text."""
    texts = as_texts(texts)
    model.eval()
    device, label_names, family, collate = (
        device_of(model),
        encoder.config.label_names,
        encoder.family,
        encoder.collate(),
    )
    results: list[Prediction] = []
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        items, views = family.read(encoder, chunk)
        with autocast(device, precision):
            out = to_host(forward_batch(model, collate([(item, None) for item in items]).to(device)))
        probabilities = torch.softmax(out.logits, dim=-1)  # [B, C]
        for row, text in enumerate(chunk):
            probs = {name: float(p) for name, p in zip(label_names, probabilities[row], strict=True)}
            prediction = Prediction(text, label_names[int(probabilities[row].argmax())], probs)
            family.attach_attention(prediction, encoder, items[row], views[row], out, row)
            results.append(prediction)
    return results
