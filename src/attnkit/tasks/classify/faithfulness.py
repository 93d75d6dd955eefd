"""The classifiers' faithfulness adapter (layer 5): one document of a HAN or a pooled classifier as a
:class:`~attnkit.explain.faithfulness.subject.Subject` — the tokens it read, batched forwards of its erased variants,
its attention (HAN: word × sentence weight; pooled: the pooling's weights, and rollout / flow through a Transformer
encoder) and its embeddings for the gradient methods, one document at a time or many stacked:

    classifier = attnkit.load("runs/ff")
    result = classifier.faithfulness(["Stale and overpriced."])[0]
    result.methods["attention"].comprehensiveness["10"], result.methods["random"].comprehensiveness["10"]

Shape glossary:
    T  tokens the model read (HAN: all sentences' words, in order)   N  erased variants   C  classes
    S  sentences   W  words per sentence   E  embedding features   H  heads   L  encoder layers
    D  documents   P  copies of each (rows are copy-major: row p·D + d is document d)
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence

import torch
from torch import nn

from attnkit.data.batching import collate_documents, collate_tokens
from attnkit.data.inputs import as_texts
from attnkit.explain.faithfulness.erasure import Erased, Erasure, as_erasure, compact, erased_probabilities
from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import DEFAULT_METHODS
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.explain.faithfulness.subject import BatchedGradientInputs, Embedded, GradientInputs
from attnkit.models.encoders import TransformerEncoder
from attnkit.models.pooled import embed_tokens, logit_parts, word_values
from attnkit.tasks.classify.han_sentence_reuse import delete_reusing_sentences

__all__ = [
    "CHUNK",
    "SUBJECTS",
    "HanSubject",
    "PooledSubject",
    "classifier_faithfulness",
    "classifier_subjects",
    "han_gradient_inputs",
    "pooled_gradient_inputs",
]


def _model_of(subjects: Sequence) -> torch.nn.Module:
    if not subjects:
        raise ValueError("no subjects to stack")
    model = subjects[0].model
    if any(subject.model is not model for subject in subjects):
        raise ValueError("the subjects to stack belong to different models")
    model.eval()
    return model


def han_gradient_inputs(subjects: Sequence) -> BatchedGradientInputs:
    """HAN documents (``HanSubject``) stacked: embeddings ``[D, S, W, E]`` of the padded word grid; the forward
    embeds only real sentences, as the model does, so it hands the model those rows of the path."""
    model = _model_of(subjects)
    device = subjects[0].device
    batch = collate_documents([(subject.sentence_ids, None) for subject in subjects], pad_id=subjects[0].pad_id)
    ids, word_mask, sentence_mask = (t.to(device) for t in (batch.token_ids, batch.word_mask, batch.sentence_mask))
    real = sentence_mask & word_mask.any(2)  # [D, S]: the sentences the model embeds
    documents = ids.shape[0]

    def forward(path: torch.Tensor) -> torch.Tensor:  # [P·D, S, W, E] -> [P·D, C]
        copies = path.shape[0] // documents
        rows = real.repeat(copies, 1).reshape(-1)  # [P·D·S]
        embedded = path.reshape(-1, *path.shape[2:])[rows]  # [real sentences, W, E]
        with Embedded(model.embedding, embedded):
            out = model(ids.repeat(copies, 1, 1), word_mask.repeat(copies, 1, 1), sentence_mask.repeat(copies, 1))
        return torch.softmax(out.logits.float(), -1)

    def to_units(attributions: torch.Tensor) -> list[torch.Tensor]:  # [D, S, W, E] -> D × [T_d]
        summed = attributions.sum(-1).cpu()  # [D, S, W]
        return [summed[d][subject.sentence_of, subject.word_of] for d, subject in enumerate(subjects)]

    with torch.no_grad():
        embeddings = model.embedding(ids)  # [D, S, W, E]
    return BatchedGradientInputs(embeddings, forward, to_units)


def pooled_gradient_inputs(subjects: Sequence) -> BatchedGradientInputs:
    """Pooled classifier documents (``PooledSubject``) stacked: embeddings ``[D, T, E]`` padded to the longest."""
    model = _model_of(subjects)
    device = subjects[0].device
    batch = collate_tokens([(subject.ids.tolist(), None) for subject in subjects], pad_id=subjects[0].pad_id)
    ids, mask = batch.token_ids.to(device), batch.mask.to(device)  # [D, T] each
    documents = ids.shape[0]

    def forward(path: torch.Tensor) -> torch.Tensor:  # [P·D, T, E] -> [P·D, C]
        copies = path.shape[0] // documents
        with Embedded(model.embedding, path):
            return torch.softmax(model(ids.repeat(copies, 1), mask.repeat(copies, 1)).logits.float(), -1)

    def to_units(attributions: torch.Tensor) -> list[torch.Tensor]:  # [D, T, E] -> D × [T_d]
        summed = attributions.sum(-1).cpu()  # [D, T]
        return [summed[d, : len(subject.tokens)] for d, subject in enumerate(subjects)]

    with torch.no_grad():
        embeddings = model.embedding(ids)  # [D, T, E]
    return BatchedGradientInputs(embeddings, forward, to_units)


CHUNK = 256  # erased variants per forward


def task_scaled(model: nn.Module, ids: torch.Tensor, attention: torch.Tensor) -> dict[str, torch.Tensor]:
    """``{"scaled_attention": |attention x s|}`` with TaSc (``s`` the task scores of the words ``ids [T]``, scored
    apart from their documents: non-contextual; the pooling multiplies each state by ``attention x s``); ``{}``."""
    if getattr(model, "task_scaling", None) is None:
        return {}
    return {"scaled_attention": (attention * _task_scores(model, ids)).abs()}


def value_contributions(
    model: nn.Module, ids: torch.Tensor, values: Callable[[], torch.Tensor], weights: torch.Tensor, label: int
) -> dict[str, torch.Tensor]:
    """``{"attention_contribution": [T]}`` (:func:`~attnkit.models.pooled.logit_parts` of the words ``ids [T]``,
    their vectors ``values() [T, E]`` (through the model's value layer, if any), attention ``weights [H, T]``; HAN:
    one row, word × sentence weight) for a model whose attention averages the words' own embeddings; ``{}``
    otherwise."""
    if getattr(model, "attention_values", "states") != "embeddings":
        return {}
    signed = None if getattr(model, "task_scaling", None) is None else _task_scores(model, ids)
    with torch.no_grad():
        averaged = word_values(model, values().to(next(model.parameters()).device))  # [T, E or N]
        return {"attention_contribution": logit_parts(model.classifier, weights, averaged, label, signed)}


def _task_scores(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """TaSc's signed scores of the words ``ids [T]`` -> ``[T]``."""
    words = ids[None].to(next(model.parameters()).device)  # [1, T]
    with torch.no_grad():
        scores = model.task_scaling(words, model.embedding(words), torch.ones_like(words, dtype=torch.bool))
    return scores[0].float().cpu()


class _ClassifierSubject(abc.ABC):
    """What both families share: the prediction, chunked forwards in eval mode without gradients."""

    def __init__(self, model: nn.Module, tokens: list[str], label_names: list[str], *, pad_id: int, unk_id: int):
        self.model, self.tokens, self.label_names = model, tokens, label_names
        self.pad_id, self.unk_id = pad_id, unk_id
        self.device = next(model.parameters()).device
        out = self._forward(*self._whole())
        self.probabilities = torch.softmax(out.logits.float(), -1)[0].cpu()  # [C]
        self.label = int(self.probabilities.argmax())
        self._output = out

    def probabilities_when(self, keep: torch.Tensor, erase: Erasure | str) -> torch.Tensor:
        """keep ``[N, T]`` -> probabilities ``[N, C]``, in forwards of at most :data:`CHUNK` variants."""
        return self.full_probabilities_when(keep, erase)

    def full_probabilities_when(self, keep: torch.Tensor, erase: Erasure | str) -> torch.Tensor:
        """The readable reference: every variant through the whole model, :data:`CHUNK` variants per forward."""

        def forward(erased: Erased, erasure: Erasure) -> torch.Tensor:  # -> logits [n, C]
            inputs, attend_mask = self._variants(erased)
            return self._forward(*inputs, attend_mask=attend_mask).logits

        classes = len(self.label_names)
        return erased_probabilities(keep, self._values(), erase, blank=self.unk_id, forward=forward, classes=classes)

    def gradient_inputs(self) -> GradientInputs:
        """This document's embeddings and forward: its family's stacked inputs of a batch of one."""
        stacked = self.batched_gradient_inputs([self])
        return GradientInputs(
            stacked.embeddings, stacked.forward, lambda attributions: stacked.to_units(attributions)[0]
        )

    def _check_keep(self, keep: torch.Tensor) -> None:
        if keep.dim() != 2 or keep.shape[-1] != len(self.tokens):
            raise ValueError(f"keep: expected [N, {len(self.tokens)}], got {tuple(keep.shape)}")

    @abc.abstractmethod
    def _whole(self) -> tuple[torch.Tensor, ...]:
        """The model's inputs for the whole document (a batch of one)."""

    @abc.abstractmethod
    def _values(self) -> torch.Tensor:
        """The token id of each unit ``[T]``."""

    @abc.abstractmethod
    def _variants(self, erased: Erased) -> tuple[tuple, torch.Tensor | None]:
        """The model's inputs for the erased variants, and their attend mask (None: attend to every token)."""

    def _forward(self, *inputs, attend_mask=None):
        self.model.eval()
        moved = [t.to(self.device) for t in inputs]
        with torch.no_grad():
            if attend_mask is None:
                return self.model(*moved)
            return self.model(*moved, attend_mask=attend_mask.to(self.device))


class PooledSubject(_ClassifierSubject):
    """One document of a :class:`~attnkit.models.pooled.PooledClassifier`: ``ids [T]``."""

    def __init__(self, model: nn.Module, ids: list[int], tokens: list[str], label_names: list[str], **ids_of):
        self.ids = torch.tensor(ids, dtype=torch.long)  # [T]
        super().__init__(model, tokens, label_names, **ids_of)

    def _whole(self) -> tuple[torch.Tensor, torch.Tensor]:
        batch = collate_tokens([(self.ids.tolist(), None)], pad_id=self.pad_id)
        return batch.token_ids, batch.mask  # [1, T] each

    def _values(self) -> torch.Tensor:
        return self.ids

    def _variants(self, erased: Erased) -> tuple:
        token_ids, mask = compact(erased.values, erased.present, self.pad_id)  # [N, T'] each
        attend = None if erased.attend is None else compact(erased.attend, erased.present, False)[0]
        return (token_ids, mask), attend  # attend: read, but out of every attention where False

    def attention_scores(self) -> dict[str, torch.Tensor]:
        """``attention`` = the pooling's weights averaged over heads; ``rollout``/``flow`` through a Transformer."""
        from attnkit.explain.faithfulness.methods import attention_flow
        from attnkit.explain.rollout import attention_rollout

        heads = self._output.pooling.weights[0].float().cpu()  # [H, T]
        pooling = heads.mean(0)  # [T]
        scores = {"attention": pooling, **task_scaled(self.model, self.ids, pooling)}
        values = lambda: self._embed(*(t.to(self.device) for t in self._whole()))[0]  # noqa: E731  [T, E], if needed
        scores.update(value_contributions(self.model, self.ids, values, heads, self.label))
        if isinstance(self.model.encoder, TransformerEncoder):
            layers = self.encoder_attention()  # L × [H, T, T]
            rollout = attention_rollout([w[None] for w in layers])[0]  # [T, T]
            scores["rollout"] = pooling @ rollout  # [T]: the pooling reads the rolled-out mixing
            scores["flow"] = attention_flow(layers, pooling).to(torch.float32)
        return scores

    def encoder_attention(self) -> list[torch.Tensor]:
        """The Transformer encoder's self-attention, one ``[H, T, T]`` per layer (first first)."""
        ids, mask = (t.to(self.device) for t in self._whole())
        with torch.no_grad():
            _, layers = self.model.encoder(self._embed(ids, mask), mask, need_weights=True)
        return [w[0].float().cpu() for w in layers]

    def attention_details(self) -> dict[str, list]:
        """``attention_heads [H][T]``."""
        return {"attention_heads": self._output.pooling.weights[0].float().cpu().tolist()}

    def _embed(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return embed_tokens(self.model, ids, mask, self.model.embedding(ids))  # [1, T, E]

    batched_gradient_inputs = staticmethod(pooled_gradient_inputs)  # many documents at once (the fast path)


class HanSubject(_ClassifierSubject):
    """One document of a :class:`~attnkit.models.han.HierarchicalAttentionClassifier`: ``ids [S][W]``; its units
    are the words of every sentence in order."""

    def __init__(self, model: nn.Module, ids: list[list[int]], tokens: list[str], label_names: list[str], **ids_of):
        self.sentence_ids = [list(sentence) for sentence in ids]
        where = [(s, w) for s, sentence in enumerate(ids) for w in range(len(sentence))]
        self.sentence_of = torch.tensor([s for s, _ in where], dtype=torch.long)  # [T]
        self.word_of = torch.tensor([w for _, w in where], dtype=torch.long)  # [T]
        self.flat_ids = torch.tensor([t for sentence in ids for t in sentence], dtype=torch.long)  # [T]
        super().__init__(model, tokens, label_names, **ids_of)
        self._predicted_with = self._distributions()

    def _distributions(self) -> tuple[int, ...]:
        """Which attention distribution objects the model holds now (the reuse of sentence vectors needs the ones
        of the prediction)."""
        return tuple(id(getattr(module, "distribution", None)) for module in self.model.modules())

    def _whole(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch = collate_documents([(self.sentence_ids, None)], pad_id=self.pad_id)
        return batch.token_ids, batch.word_mask, batch.sentence_mask  # [1, S, W], [1, S, W], [1, S]

    def probabilities_when(self, keep: torch.Tensor, erase: Erasure | str) -> torch.Tensor:
        """keep ``[N, T]`` -> probabilities ``[N, C]``. ``delete`` reuses the vectors of the sentences a variant
        leaves untouched (:mod:`~attnkit.tasks.classify.han_sentence_reuse`, equal to :meth:`full_probabilities_when`);
        the rest run the whole model, and so does ``delete`` once an attention distribution of the model has been
        swapped since the prediction (the permutation test's shuffles)."""
        if not as_erasure(erase).only_removes or self._distributions() != self._predicted_with:
            return self.full_probabilities_when(keep, erase)
        self._check_keep(keep)
        if keep.shape[0] == 0:
            return torch.empty(0, len(self.label_names))
        grid, vectors = self._whole()[0][0], self._output.words.context[0]  # [S, W], [S, D]
        where = {"sentence_of": self.sentence_of, "word_of": self.word_of, "chunk": CHUNK, "pad_id": self.pad_id}
        return delete_reusing_sentences(self.model, token_grid=grid, sentence_vectors=vectors, keep=keep.cpu(), **where)

    def _values(self) -> torch.Tensor:
        return self.flat_ids

    def _variants(self, erased: Erased) -> tuple:
        n = erased.values.shape[0]
        attend = erased.attend
        if erased.present.all():  # every word stays where it is
            token_ids, word_mask, sentence_mask = (t.expand(n, *t.shape[1:]).clone() for t in self._whole())
            token_ids[:, self.sentence_of, self.word_of] = erased.values
            if attend is not None:
                grid, attend = attend, torch.zeros_like(word_mask)
                attend[:, self.sentence_of, self.word_of] = grid
            return (token_ids, word_mask, sentence_mask), attend
        # words leave their sentences; a sentence left empty leaves the document
        present = erased.present
        sentences = max(len(self.sentence_ids), 1)
        per_sentence = torch.zeros(n, sentences, dtype=torch.long).index_add_(1, self.sentence_of, present.long())
        order = torch.sort((per_sentence == 0).to(torch.int8), dim=1, stable=True).indices
        lengths = torch.gather(per_sentence, 1, order)  # [N, S] non-empty sentences first
        lengths = lengths[:, : max(int((lengths > 0).sum(1).max()), 1)]
        word_mask = torch.arange(max(int(lengths.max()), 1)) < lengths[..., None]  # [N, S', W']
        token_ids = torch.full(word_mask.shape, self.pad_id, dtype=torch.long)
        token_ids[word_mask] = erased.values[present]
        if attend is not None:
            grid, attend = attend, torch.zeros_like(word_mask)
            attend[word_mask] = grid[present]
        return (token_ids, word_mask, lengths > 0), attend

    def _levels(self) -> tuple[torch.Tensor, torch.Tensor]:
        words = self._output.words.weights[0].float().cpu()  # [S, W]
        sentences = self._output.sentences.weights[0].float().cpu()  # [S]
        return words[self.sentence_of, self.word_of], sentences  # [T], [S]

    def attention_scores(self) -> dict[str, torch.Tensor]:
        """``attention``: each word's weight in its sentence × its sentence's weight in the document."""
        words, sentences = self._levels()
        attention = words * sentences[self.sentence_of]  # [T]
        embedded = lambda: self._embedded()[self.sentence_of, self.word_of]  # noqa: E731  [T, E], where needed
        parts = value_contributions(self.model, self.flat_ids, embedded, attention[None], self.label)
        return {"attention": attention, **task_scaled(self.model, self.flat_ids, attention), **parts}

    def _embedded(self) -> torch.Tensor:
        """The words' vectors as the word level reads them (bigrams within each sentence) -> ``[S, W, E]``."""
        token_ids, word_mask, _ = (t[0].to(self.device) for t in self._whole())  # [S, W] each
        return embed_tokens(self.model, token_ids, word_mask, self.model.embedding(token_ids)).cpu()

    def attention_details(self) -> dict[str, list]:
        """``attention_words [T]`` (within each sentence) and ``attention_sentences [S]``."""
        words, sentences = self._levels()
        return {"attention_words": words.tolist(), "attention_sentences": sentences.tolist()}

    batched_gradient_inputs = staticmethod(han_gradient_inputs)  # many documents at once (the fast path)


def _han_subject(classifier, item: list, sentences: list[str], **ids) -> HanSubject:
    """A HAN document: its units are the words the model read, sentence after sentence."""
    tokenizer = classifier.encoder.tokenizer
    tokens = [
        token
        for sentence, words in zip(sentences, item, strict=False)
        for token in tokenizer.tokens(sentence)[: len(words)]
    ]
    return HanSubject(classifier.model, item, tokens, classifier.label_names, **ids)


def _pooled_subject(classifier, item: list, text: str, **ids) -> PooledSubject:
    """A pooled classifier's document: its units are its tokens."""
    tokens = classifier.encoder.tokenizer.tokens(text)[: len(item)]
    return PooledSubject(classifier.model, item, tokens, classifier.label_names, **ids)


# The subject of each model family, by ClassifierConfig.model (as encoding.FAMILIES).
SUBJECTS = {"han": _han_subject, "pooled": _pooled_subject}


def classifier_subjects(classifier, texts: Sequence[str]) -> list:
    """Each text as the classifier reads it, ready for the tests (HAN: :class:`HanSubject`; pooled:
    :class:`PooledSubject`), each with its prediction made."""
    encoder = classifier.encoder
    items, views = encoder.family.read(encoder, list(texts))
    ids = {"pad_id": encoder.tokenizer.pad_id, "unk_id": encoder.tokenizer.unk_id}
    build = SUBJECTS[classifier.config.model]
    return [build(classifier, item, view, **ids) for item, view in zip(items, views, strict=True)]


def classifier_faithfulness(
    classifier,
    texts: str | Sequence[str],
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
) -> list[DocumentFaithfulness]:
    """The faithfulness tests on each text's prediction (see :mod:`attnkit.explain.faithfulness`); ``texts`` are
    taken as ``predict`` takes them (an empty sequence gives ``[]``)."""
    texts = as_texts(texts)
    if not texts:
        return []
    subjects = classifier_subjects(classifier, texts)
    return faithfulness_of(subjects, texts=texts, methods=methods, erase=erase, seed=seed, steps=steps)
