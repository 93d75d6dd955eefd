"""The faithfulness tests for a Hugging Face sequence classifier (layer 5; ``transformers`` is an optional extra:
``pip install 'attnkit[hf]'``): any ``AutoModelForSequenceClassification`` with its tokenizer, one text at a time.

    from attnkit.explain.faithfulness import huggingface
    model, tokenizer = huggingface.load_local("path/to/model")      # a local directory: nothing is downloaded
    results = huggingface.faithfulness(model, tokenizer, ["Lovely tea, would buy again."])
    results[0].methods["attention"].aopc_comprehensiveness

The units are words (the tokenizer's pre-tokenised words, ``word_ids``); a word's score is the sum over its word
pieces, and erasing a word erases all its pieces. The special tokens (``[CLS]``, ``[SEP]``) are never erased and
never scored. ``attention`` is the last layer's attention from the read-out token (``[CLS]``, the first, which
BERT-like classification heads read; ``readout="last"`` for a decoder whose head reads the last token), heads
averaged; ``rollout`` and ``flow`` follow that token down through every layer (Abnar & Zuidema 2020). ``delete``
closes the ids up (as the tokenizer gives a whitespace-split text without the word), ``mask`` sets the pieces'
``attention_mask`` to 0, ``unk`` makes each piece the unknown token.

Gradient methods attribute to the word pieces' input embeddings (through ``inputs_embeds``); the special tokens
keep their embeddings along the integration path. :func:`write_hf_report` writes the offline HTML report: per
text, the prediction, the last layer's read-out attention per head, rollout, and the faithfulness panel.

Shape glossary:
    P  pieces of the text (special tokens included)   T  words (units)   N  erased variants   C  classes
    L  layers   H  heads   E  embedding features
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from attnkit.explain.faithfulness.erasure import Erasure, as_erasure, compact
from attnkit.explain.faithfulness.subject import GradientInputs
from attnkit.explain.html import (
    Section,
    caption_html,
    colour_scale_html,
    escape,
    prediction_html,
    shaded_tokens,
    write_report,
)

__all__ = [
    "CAPTION",
    "CHUNK",
    "HuggingFaceSubject",
    "eager_attention",
    "faithfulness",
    "hf_sections",
    "load_local",
    "subjects",
    "write_hf_report",
]

CHUNK = 64  # erased variants per forward
READOUTS = ("first", "last")


def load_local(directory: str | os.PathLike[str]) -> tuple[nn.Module, object]:
    """The model (``AutoModelForSequenceClassification``, eval mode, eager attention) and tokenizer saved in a
    local ``directory`` (``save_pretrained``); never downloads. What the directory lacks is one ``OSError``
    (:mod:`~attnkit.explain.faithfulness.hf_directory`)."""
    from attnkit.explain.faithfulness.hf_directory import check_directory, check_tokenizer

    path = Path(directory)
    if not path.is_dir() or not (path / "config.json").is_file():
        check_directory(path, ())  # the missing directory or config.json, named before transformers loads
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers = _transformers()
    transformers.utils.logging.disable_progress_bar()
    check_directory(path, transformers.CONFIG_MAPPING)  # model_type, whole weights, tokenizer files
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(path), local_files_only=True, attn_implementation="eager"
        )
    except (OSError, ValueError, KeyError, RuntimeError) as error:
        raise OSError(f"{path}: not a Hugging Face sequence classifier with its tokenizer ({error})") from None
    check_tokenizer(path, tokenizer)
    return model.eval(), tokenizer


def _transformers():
    try:
        import transformers
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise RuntimeError("Hugging Face models need transformers: pip install 'attnkit[hf]'") from error
    return transformers


@contextmanager
def eager_attention(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block the model computes attention eagerly (SDPA and flash kernels return no weights), in eval
    mode; its implementation is restored after."""
    config = model.config
    before = getattr(config, "_attn_implementation", None)
    switch = before not in (None, "eager") and hasattr(model, "set_attn_implementation")
    if switch:
        model.set_attn_implementation("eager")
    try:
        yield model.eval()
    finally:
        if switch:
            model.set_attn_implementation(before)


class HuggingFaceSubject:
    """One text as a Hugging Face sequence classifier reads it (see the module docstring)."""

    def __init__(self, model: nn.Module, tokenizer, text: str, *, readout: str = "first") -> None:
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {', '.join(READOUTS)}, got {readout!r}")
        encoding = tokenizer(text, truncation=True)
        if not hasattr(encoding, "word_ids"):
            raise ValueError("the tokenizer must be a fast tokenizer (word_ids tells which word each piece is)")
        self.model, self.readout = model, readout
        self.ids = torch.tensor(encoding["input_ids"], dtype=torch.long)  # [P]
        word_ids = encoding.word_ids()
        offsets = encoding.encodings[0].offsets if encoding.encodings else None
        words = list(dict.fromkeys(w for w in word_ids if w is not None))
        self.piece_word = torch.tensor([-1 if w is None else words.index(w) for w in word_ids])  # [P], -1: special
        self.tokens = [_word_text(text, word_ids, offsets, word, tokenizer, encoding) for word in words]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.unk_id = tokenizer.unk_token_id
        self.device = next(model.parameters()).device
        names = getattr(model.config, "id2label", None) or {}
        logits, attentions = self._run(self.ids[None], torch.ones(1, len(self.ids), dtype=torch.long), True)
        self.label_names = [str(names.get(i, f"LABEL_{i}")) for i in range(logits.shape[-1])]
        self.probabilities = torch.softmax(logits.float(), -1)[0].cpu()  # [C]
        self.label = int(self.probabilities.argmax())
        self.attentions = [a[0].float().cpu() for a in attentions]  # L x [H, P, P]

    @property
    def readout_index(self) -> int:
        """The piece whose final state the classification head reads."""
        return 0 if self.readout == "first" else len(self.ids) - 1

    def _run(self, ids: torch.Tensor, attention_mask: torch.Tensor, attentions: bool = False):
        with torch.no_grad():
            out = self.model(
                input_ids=ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                output_attentions=attentions,
            )
        if attentions and not out.attentions:
            raise ValueError("the model returned no attentions: load it with attn_implementation='eager'")
        return out.logits, out.attentions

    def probabilities_when(self, keep: torch.Tensor, erase: Erasure | str) -> torch.Tensor:
        """keep ``[N, T]`` (False = erase that word the ``erase`` way) -> probabilities ``[N, C]``, in forwards of
        at most :data:`CHUNK` variants."""
        if keep.shape[-1] != len(self.tokens):
            raise ValueError(f"keep: expected [N, {len(self.tokens)}], got {tuple(keep.shape)}")
        erasure = as_erasure(erase)
        parts = []
        for start in range(0, keep.shape[0], CHUNK):
            ids, attention_mask = self.variants(keep[start : start + CHUNK].cpu(), erasure)
            parts.append(torch.softmax(self._run(ids, attention_mask)[0].float(), -1).cpu())
        return torch.cat(parts) if parts else torch.empty(0, len(self.label_names))

    def variants(self, keep: torch.Tensor, erase: Erasure | str) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``input_ids`` and ``attention_mask`` ``[N, P']`` of the erased variants ``keep [N, T]`` (a word's
        pieces are erased with it; special tokens never)."""
        erasure = as_erasure(erase)
        special = self.piece_word < 0  # [P]
        kept_pieces = special | keep[:, self.piece_word.clamp_min(0)]  # [N, P]
        blank = -1 if self.unk_id is None else self.unk_id
        erased = erasure.erase(self.ids.expand(keep.shape[0], -1), kept_pieces, blank=blank)
        if not bool(erased.present.all()) and self.readout == "last":
            raise ValueError(f"{erasure.name} erasure with readout='last' needs left padding; use erase='mask'")
        if bool((erased.values < 0).any()):
            raise ValueError(f"erase={erasure.name!r}: the tokenizer has no unknown token")
        ids, mask = compact(erased.values, erased.present, self.pad_id)  # [N, P'], pieces close up (right padding)
        if erased.attend is not None:
            mask = mask & compact(erased.attend, erased.present, False)[0]
        return ids, mask.long()

    def _per_word(self, scores: torch.Tensor) -> torch.Tensor:
        """Piece scores ``[..., P]`` -> word scores ``[..., T]`` (summed over each word's pieces)."""
        words = self.piece_word >= 0
        out = torch.zeros(*scores.shape[:-1], len(self.tokens), dtype=scores.dtype)
        return out.index_add_(-1, self.piece_word[words], scores[..., words])

    def attention_scores(self) -> dict[str, torch.Tensor]:
        """``attention``: the last layer's read-out row (heads averaged); ``rollout`` / ``flow`` through every
        layer, read out at the same token; each summed over a word's pieces: ``[T]``."""
        from attnkit.explain.faithfulness.methods import attention_flow
        from attnkit.explain.rollout import attention_rollout

        row = self.readout_index
        last = self.attentions[-1][:, row].mean(0)  # [P]
        rolled = attention_rollout([a[None] for a in self.attentions])[0, row]  # [P]
        readout = torch.zeros(len(self.ids), dtype=torch.float64)
        readout[row] = 1.0
        flow = attention_flow(self.attentions, readout).to(torch.float32)  # [P]
        return {"attention": self._per_word(last), "rollout": self._per_word(rolled), "flow": self._per_word(flow)}

    def attention_details(self) -> dict[str, list]:
        """``attention_heads [H][T]``: the last layer's read-out row per head."""
        return {"attention_heads": self._per_word(self.attentions[-1][:, self.readout_index]).tolist()}

    def gradient_inputs(self) -> GradientInputs:
        """The word pieces' input embeddings ``[1, P_words, E]``; the forward puts them back among the special
        tokens' embeddings and runs the model on ``inputs_embeds``."""
        ids = self.ids[None].to(self.device)  # [1, P]
        words = (self.piece_word >= 0).to(self.device)  # [P]
        attention_mask = torch.ones_like(ids)
        layer = self.model.get_input_embeddings()
        with torch.no_grad():
            full = layer(ids)  # [1, P, E]

        def forward(embedded: torch.Tensor) -> torch.Tensor:  # [n, P_words, E] -> [n, C]
            n = embedded.shape[0]
            inputs = full.expand(n, -1, -1).clone()
            inputs[:, words] = embedded
            out = self.model(inputs_embeds=inputs, attention_mask=attention_mask.expand(n, -1))
            return torch.softmax(out.logits.float(), -1)

        word_of = self.piece_word[self.piece_word >= 0]  # [P_words]

        def to_units(attributions: torch.Tensor) -> torch.Tensor:  # [1, P_words, E] -> [T]
            summed = attributions[0].sum(-1).cpu()
            return torch.zeros(len(self.tokens), dtype=summed.dtype).index_add_(0, word_of, summed)

        return GradientInputs(full[:, words], forward, to_units)


def _word_text(text: str, word_ids: list, offsets, word: int, tokenizer, encoding) -> str:
    """The word as written in ``text`` (from the pieces' character offsets), else its decoded pieces."""
    pieces = [i for i, w in enumerate(word_ids) if w == word]
    if offsets is not None:
        start, end = offsets[pieces[0]][0], offsets[pieces[-1]][1]
        if end > start:
            return text[start:end]
    return tokenizer.decode([encoding["input_ids"][i] for i in pieces]).strip()


def subjects(model: nn.Module, tokenizer, texts: Sequence[str], *, readout: str = "first") -> list:
    """Each text as the model reads it (its prediction made), ready for the tests. The model must compute
    attention eagerly (:func:`eager_attention`)."""
    return [HuggingFaceSubject(model, tokenizer, text, readout=readout) for text in texts]


def faithfulness(
    model: nn.Module,
    tokenizer,
    texts: str | Sequence[str],
    *,
    methods: Sequence[str] | None = None,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
    readout: str = "first",
) -> list:
    """The faithfulness tests on each text's prediction by a Hugging Face sequence classifier: one
    :class:`~attnkit.explain.faithfulness.results.DocumentFaithfulness` per text. The model runs where its
    parameters are. ``texts`` as ``predict`` takes them: a ``str`` is one text, an empty sequence gives ``[]``."""
    from attnkit.data.inputs import as_texts

    if not as_texts(texts):
        return []
    options = {"methods": methods, "erase": erase, "seed": seed, "steps": steps}
    return _tested(model, tokenizer, texts, readout, options)[1]


def _tested(model: nn.Module, tokenizer, texts: Sequence[str], readout: str, options: dict) -> tuple[list, list]:
    """``(subjects, results)`` of ``texts``, the model computing attention eagerly."""
    from attnkit.data.inputs import as_texts
    from attnkit.explain.faithfulness.evaluate import faithfulness_of

    texts = as_texts(texts)
    if not texts:
        raise ValueError("no texts to test")
    with eager_attention(model):
        found = subjects(model, tokenizer, texts, readout=readout)
        return found, faithfulness_of(found, texts=texts, **options)


CAPTION = (
    "Words shaded by the last layer's attention from the token the classification head reads ([CLS]), one row per "
    "head, each word the sum over its word pieces, relative to the row's largest weight; then attention rollout, "
    "which follows that token's attention down through every layer to the input words. Special tokens are left out. "
    "The panel below tests whether these weights explain the prediction."
)


def hf_sections(subjects: Sequence, results: Sequence) -> list[Section]:
    """One section per text: ``subjects`` (:class:`~attnkit.explain.faithfulness.huggingface.HuggingFaceSubject`)
    and their :class:`~attnkit.explain.faithfulness.results.DocumentFaithfulness`, in the same order."""
    from attnkit.explain.faithfulness.panel import faithfulness_panel

    if len(subjects) != len(results):
        raise ValueError(f"results: {len(results)} for {len(subjects)} text(s)")
    sections = []
    for number, (subject, result) in enumerate(zip(subjects, results, strict=True), start=1):
        heads = torch.tensor(result.details["attention_heads"], dtype=torch.float64)  # [H, T]
        rows = [
            f'<div class="attn-row" data-head="{head + 1}"><span class="attn-head">head {head + 1}</span>'
            f"{shaded_tokens(result.tokens, heads[head])}</div>"
            for head in range(heads.shape[0])
        ]
        if "rollout" in result.methods:
            rollout = torch.tensor(result.methods["rollout"].scores, dtype=torch.float64)  # [T]
            rows.append(
                '<div class="attn-row" data-method="rollout"><span class="attn-head">rollout</span>'
                f"{shaded_tokens(result.tokens, rollout)}</div>"
            )
        body = [
            f'<p class="attn-text">{escape(result.text)}</p>',
            prediction_html(subject.label_names, subject.probabilities),
            caption_html(CAPTION),
            colour_scale_html("0", "the row's largest weight"),
            '<div class="attn-rows">' + "\n".join(rows) + "</div>",
            faithfulness_panel(result),
        ]
        sections.append(Section(f"Text {number}", "\n".join(body)))
    return sections


def write_hf_report(
    model: nn.Module,
    tokenizer,
    texts: str | Sequence[str],
    path: str | os.PathLike[str],
    *,
    title: str = "What the Hugging Face classifier attended to, and whether it explains the prediction",
    methods: Sequence[str] | None = None,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
    readout: str = "first",
) -> tuple[Path, list]:
    """Run the tests on ``texts`` and write the report to ``path``; returns the path written and the results."""
    options = {"methods": methods, "erase": erase, "seed": seed, "steps": steps}
    found, results = _tested(model, tokenizer, texts, readout, options)
    return write_report(path, hf_sections(found, results), title=title), results
