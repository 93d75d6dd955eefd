"""Does a translation model's attention explain each emitted token? The faithfulness tests over the source
tokens, one emitted target token at a time (layer 5): what ``attnkit faithfulness`` and
``LoadedSeq2Seq.faithfulness`` run for a seq2seq checkpoint.

    g2p = attnkit.load("runs/g2p")
    steps = g2p.faithfulness(["attention"])[0]       # one DocumentFaithfulness per emitted phoneme
    steps[0].label, steps[0].methods["attention"].comprehensiveness["10"]

The decoder is teacher-forced on the decoded prefix ``<bos> y_1 .. y_{t-1}`` and the prediction is its
distribution at step ``t``; an erased source changes only the source. ``attention`` is the step's attention over
the source (the Transformer: the last layer's cross-attention, heads averaged). An RNN encoder reads a prefix, so
it has ``delete`` and ``unk`` erasure only (no ``mask``).

Shape glossary:
    S  source tokens   t  the step   V  target vocabulary   N  erased variants   H  heads   E  embedding features
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnkit.data.inputs import as_texts
from attnkit.data.seq2seq.vocab import BOS_ID, PAD_ID, UNK_ID
from attnkit.explain.faithfulness.erasure import Erased, Erasure, compact, erased_probabilities
from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import STEPS
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.explain.faithfulness.subject import Embedded, GradientInputs
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq

__all__ = [
    "CHUNK",
    "Seq2SeqStepSubject",
    "checkpoint_faithfulness",
    "faithfulness_command",
    "seq2seq_faithfulness",
    "step_subjects",
    "text_faithfulness",
]


def seq2seq_faithfulness(
    loaded,
    texts: str | Sequence[str],
    *,
    methods: Sequence[Any] | None = None,
    erase: Any = "delete",
    seed: int = 0,
    steps: int = STEPS,
) -> list[list[DocumentFaithfulness]]:
    """For each text, greedy-decode it, then run the tests on every emitted token (``<eos>`` included) over the
    source tokens: one :class:`DocumentFaithfulness` per step, its ``label`` the emitted token."""
    texts = as_texts(texts)
    if not texts:
        return []
    results = []
    for number, (text, subjects) in enumerate(zip(texts, step_subjects(loaded, texts), strict=True)):
        labels = [f"{text} -> step {step + 1}" for step in range(len(subjects))]
        results.append(
            faithfulness_of(subjects, texts=labels, methods=methods, erase=erase, seed=seed + number, steps=steps)
        )
    return results


def step_subjects(loaded, texts: Sequence[str]) -> list[list[Seq2SeqStepSubject]]:
    """For each text, greedy-decode it: one :class:`Seq2SeqStepSubject` per emitted token (``<eos>`` included),
    its units the source tokens."""
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to test")
    translations = loaded.translate(texts)
    vocabulary = [loaded.target_tokenizer.id_to_token(i) for i in range(loaded.model.output.out_features)]
    found = []
    for text, translation in zip(texts, translations, strict=True):
        source_ids = loaded.source_tokenizer.encode(text)
        tokens = loaded.source_tokenizer.tokens(text)[: len(source_ids)]
        target_ids = list(translation.token_ids or [])
        steps = range(len(target_ids))
        found.append([Seq2SeqStepSubject(loaded.model, source_ids, target_ids, t, tokens, vocabulary) for t in steps])
    return found


def text_faithfulness(loaded, texts: Sequence[str], **options: Any) -> list[DocumentFaithfulness]:
    """One result per text for ``attnkit explain --faithfulness``: the tests of every emitted token averaged."""
    from attnkit.explain.faithfulness.results import mean_over_steps

    per_text = seq2seq_faithfulness(loaded, texts, **options)
    return [mean_over_steps(found, text=text) for text, found in zip(texts, per_text, strict=True)]


def faithfulness_command(args: argparse.Namespace, loaded) -> int:
    """``attnkit faithfulness`` for a seq2seq model: a table per emitted token, or one JSON object per text
    ``{"text", "translation", "steps": [the classifier's object per emitted token]}``."""
    from attnkit.explain.faithfulness.results import print_results
    from attnkit.tasks.options import read_texts

    texts = read_texts(args)
    results = seq2seq_faithfulness(
        loaded, texts, methods=args.methods, erase=args.erase, seed=args.seed, steps=args.steps
    )
    for text, per_step in zip(texts, results, strict=True):
        translation = " ".join(result.label for result in per_step)
        envelope = {"text": text, "translation": translation}
        print_results(per_step, as_json=args.json, noun="step", heading=f"{text} -> {translation}", envelope=envelope)
    return 0


def checkpoint_faithfulness(args: argparse.Namespace, checkpoint: Path, load) -> int:
    """Load ``checkpoint`` with ``load`` after the texts are read, then :func:`faithfulness_command`."""
    from attnkit.tasks.options import read_texts

    read_texts(args)  # a missing --file is refused before the model loads
    return faithfulness_command(args, load(checkpoint, device=args.device, precision=args.precision))


CHUNK = 256  # erased variants per forward


class Seq2SeqStepSubject:
    """Target step ``step`` of ``model`` translating ``source_ids [S]`` into ``target_ids``."""

    def __init__(
        self,
        model: nn.Module,
        source_ids: list[int],
        target_ids: list[int],
        step: int,
        tokens: list[str],
        label_names: list[str],
    ) -> None:
        if not 0 <= step < len(target_ids):
            raise ValueError(f"step {step} is outside the {len(target_ids)} decoded tokens")
        self.model, self.tokens, self.label_names, self.step = model, tokens, label_names, step
        self.device = next(model.parameters()).device
        self.source = torch.tensor(source_ids, dtype=torch.long)  # [S]
        self.target_in = torch.tensor([BOS_ID, *target_ids[:step]], dtype=torch.long)  # [t + 1]
        out = self._run(self.source[None], torch.ones(1, len(source_ids), dtype=torch.bool), need_weights=True)
        self.probabilities = torch.softmax(out.logits[0, step].float(), -1).cpu()  # [V]
        self.label = int(self.probabilities.argmax())
        self._output = out

    def _run(self, source: torch.Tensor, mask: torch.Tensor, *, need_weights: bool = False):
        self.model.eval()
        target = self.target_in.expand(source.shape[0], -1)
        with torch.no_grad():
            return self.model(*(t.to(self.device) for t in (source, mask, target)), need_weights=need_weights)

    def probabilities_when(self, keep: torch.Tensor, erase: Erasure | str) -> torch.Tensor:
        """keep ``[N, S]`` -> the step's distribution ``[N, V]``, in forwards of at most :data:`CHUNK`."""

        def forward(erased: Erased, erasure: Erasure) -> torch.Tensor:  # -> the step's logits [n, V]
            source, mask = compact(erased.values, erased.present, PAD_ID)  # [n, S'] each
            if erased.attend is not None:
                if not isinstance(self.model, TransformerSeq2Seq):
                    raise ValueError(
                        f"--erase {erasure.name}: an RNN encoder reads every token of its prefix; use delete or unk"
                    )
                mask = mask & compact(erased.attend, erased.present, False)[0]
            return self._run(source, mask).logits[:, self.step]

        classes = len(self.label_names)
        return erased_probabilities(keep, self.source, erase, blank=UNK_ID, forward=forward, classes=classes)

    def _cross(self) -> torch.Tensor:
        """The step's attention over the source ``[S]`` (Transformer: last layer, heads averaged)."""
        if isinstance(self.model, TransformerSeq2Seq):
            return self._output.cross_attention[-1][0, :, self.step].float().mean(0).cpu()  # [S]
        attention = self._output.attention
        if attention is None:
            return torch.empty(0)
        return attention[0, self.step].float().cpu()  # [S]

    def attention_scores(self) -> dict[str, torch.Tensor]:
        """``attention`` over the source; ``rollout`` and ``flow`` through a Transformer encoder."""
        from attnkit.explain.faithfulness.methods import attention_flow
        from attnkit.explain.rollout import attention_rollout

        cross = self._cross()
        if cross.numel() == 0:
            return {}  # the no-attention baseline has nothing to show
        scores = {"attention": cross}
        if isinstance(self.model, TransformerSeq2Seq):
            layers = [w[0].float().cpu() for w in self._output.encoder_attention]  # L x [H, S, S]
            scores["rollout"] = cross @ attention_rollout([w[None] for w in layers])[0]  # [S]
            scores["flow"] = attention_flow(layers, cross).to(torch.float32)
        return scores

    def permutable(self) -> list[nn.Module] | None:
        """The attention modules Jain & Wallace's permutation test shuffles: a Transformer's decoder
        cross-attentions; None (the model's attention poolings) otherwise."""
        if isinstance(self.model, TransformerSeq2Seq):
            return [layer.cross_attention for layer in self.model.decoder_layers]
        return None

    def attention_details(self) -> dict[str, list]:
        """Transformer: ``attention_heads [H][S]`` of the last layer's cross-attention at this step."""
        if isinstance(self.model, TransformerSeq2Seq):
            return {"attention_heads": self._output.cross_attention[-1][0, :, self.step].float().cpu().tolist()}
        return {}

    def gradient_inputs(self) -> GradientInputs:
        """The source embeddings ``[1, S, E]``; the forward replaces them and reads the step's distribution."""
        source = self.source[None].to(self.device)
        mask = torch.ones_like(source, dtype=torch.bool)
        target = self.target_in[None].to(self.device)
        self.model.eval()

        def forward(embedded: torch.Tensor) -> torch.Tensor:  # [n, S, E] -> [n, V]
            n = embedded.shape[0]
            with Embedded(self.model.source_embedding, embedded):
                out = self.model(source.expand(n, -1), mask.expand(n, -1), target.expand(n, -1))
            return torch.softmax(out.logits[:, self.step].float(), -1)

        with torch.no_grad():
            embeddings = self.model.source_embedding(source)  # [1, S, E]
        return GradientInputs(embeddings, forward, lambda attributions: attributions[0].sum(-1).cpu())
