"""A CTranslate2 export in Python (layer 5): what ``attnkit.load("exports/x")`` returns.

``translate`` and ``evaluate`` answer as a checkpoint's :class:`~attnkit.tasks.seq2seq.inference.LoadedSeq2Seq`
does, decoded by CTranslate2. An export gives no attention weights and cannot be explained, trained, resumed or
exported again: those need the attnkit checkpoint it came from (``manifest["source"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attnkit.data.inputs import as_pairs, as_texts
from attnkit.tasks.seq2seq.config import Seq2SeqConfig
from attnkit.tasks.seq2seq.ctranslate2.evaluate import ctranslate2_device, evaluate_ctranslate2, export_config
from attnkit.tasks.seq2seq.ctranslate2.export import load_ctranslate2
from attnkit.tasks.seq2seq.ctranslate2.translator import CTranslate2Translator
from attnkit.tasks.seq2seq.inference import Translation
from attnkit.tasks.seq2seq.scoring import scoring_named

__all__ = ["LoadedExport", "load_export"]


class LoadedExport:
    """An export loaded in CTranslate2, with its checkpoint's config (task, data, metrics)."""

    def __init__(self, translator: CTranslate2Translator, config: Seq2SeqConfig, directory: Path) -> None:
        self.translator, self.config, self.directory = translator, config, directory

    @property
    def source_tokenizer(self):
        return self.translator.source_tokenizer

    @property
    def target_tokenizer(self):
        return self.translator.target_tokenizer

    def translate(
        self,
        texts: str | Sequence[str],
        *,
        beam_size: int = 1,
        batch_size: int = 64,
        length_penalty: float = 1.0,
        max_len: int | None = None,
        need_weights: bool = False,
        num_hypotheses: int = 1,
    ) -> list[Translation]:
        """Decode ``texts`` in input order, as ``LoadedSeq2Seq.translate`` does (``attention`` is always None)."""
        if need_weights:
            raise ValueError(
                f"{self.directory}: a CTranslate2 export gives no attention weights; load the checkpoint it came "
                f"from ({self.translator.manifest.get('source') or 'unknown'}) for them"
            )
        texts = as_texts(texts)
        if not texts:  # an empty batch: no translations
            return []
        found = self.translator.translate(
            texts, beam_size=beam_size, num_hypotheses=num_hypotheses, max_len=max_len,
            length_penalty=length_penalty, batch_size=batch_size,
        )  # fmt: skip
        return [
            Translation.best_of([Translation(source, h.text, h.score, None, list(h.token_ids)) for h in hypotheses])
            for source, hypotheses in zip(texts, found, strict=True)
        ]

    def evaluate(
        self, sources: Sequence[str], targets: Sequence[str | Sequence[str]], **options: Any
    ) -> dict[str, float]:
        """The decoded metrics of ``sources`` against ``targets``, as ``LoadedSeq2Seq.evaluate`` gives them but with
        no teacher-forced loss (an export cannot compute one)."""
        pairs, references = as_pairs(sources, targets)
        scoring = scoring_named(self.config.metrics)
        return evaluate_ctranslate2(self.translator, pairs, references, scoring=scoring, **options)


def load_export(directory: str | Path, *, device: str = "auto") -> LoadedExport:
    """Verify and load the export at ``directory`` on ``device`` (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``)."""
    directory = Path(directory)
    device_name, index = ctranslate2_device(str(device))
    translator = load_ctranslate2(directory, device=device_name, device_index=index)
    return LoadedExport(translator, export_config(translator.manifest, directory), directory)
