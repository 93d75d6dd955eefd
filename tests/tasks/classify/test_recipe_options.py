"""The faithful-attention options in the classifier's config (issue #38): checked, stored, read back (a config.json
written before them reads as the recipe its model was trained with), built into the model, and the diversity
penalty added by the objective exactly as computed by hand."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from attnkit.data.batching import collate_documents, collate_tokens
from attnkit.distributions import Entmax15, Softmax, Sparsemax, Uniform
from attnkit.models.diversity import diversity_penalty
from attnkit.pooling import AttentionPooling, FeatTaskScaling, LinTaskScaling
from attnkit.tasks.classify.config import RECIPE_BEFORE_OPTIONS, ClassifierConfig, build_classifier
from attnkit.tasks.classify.encoding import forward_batch
from attnkit.tasks.classify.objective import DiverseEncoderObjective, classification_objective
from attnkit.tasks.classify.training import checkpoint_config
from attnkit.training.cross_entropy import CrossEntropyObjective

SMALL = {"label_names": ["a", "b"], "embed_dim": 8, "hidden": 4, "dropout": 0.0}


def test_the_options_round_trip_through_the_checkpoint_config():
    config = ClassifierConfig(
        model="pooled", attention_distribution="entmax15", task_scaling="feat", encoder_diversity=0.25,
        attention_values="embeddings", value_layer=32, **SMALL,
    )  # fmt: skip
    values = json.loads(json.dumps(config.to_dict()))
    assert {k: values[k] for k in RECIPE_BEFORE_OPTIONS} == {
        "attention_distribution": "entmax15",
        "task_scaling": "feat",
        "encoder_diversity": 0.25,
        "attention_values": "embeddings",
        "value_layer": 32,
    }
    assert ClassifierConfig.from_dict(values) == config


def test_a_config_written_before_the_options_reads_as_todays_recipe():
    legacy = {k: v for k, v in ClassifierConfig(**SMALL).to_dict().items() if k not in RECIPE_BEFORE_OPTIONS}
    config = ClassifierConfig.from_dict(legacy)
    assert {k: getattr(config, k) for k in RECIPE_BEFORE_OPTIONS} == RECIPE_BEFORE_OPTIONS
    assert RECIPE_BEFORE_OPTIONS == {
        "attention_distribution": "softmax",
        "task_scaling": "none",
        "encoder_diversity": 0.0,
        "attention_values": "states",
        "value_layer": 0,
    }


def test_an_old_config_builds_the_same_model_as_before():
    """No new parameter or buffer, and the same outputs from the same weights: old weights load unchanged."""
    legacy = {
        k: v for k, v in ClassifierConfig(model="han", **SMALL).to_dict().items() if k not in RECIPE_BEFORE_OPTIONS
    }
    torch.manual_seed(0)
    old = build_classifier(ClassifierConfig.from_dict(legacy), 20).eval()
    assert not any("task_scaling" in name for name in old.state_dict())
    assert all(type(m.distribution) is Softmax for m in old.modules() if isinstance(m, AttentionPooling))
    from attnkit.models import HierarchicalAttentionClassifier

    before = HierarchicalAttentionClassifier(20, 2, embed_dim=8, word_hidden=4, sentence_hidden=4, dropout=0.0).eval()
    assert before.load_state_dict(old.state_dict()) is not None  # strict: same keys, same shapes
    batch = collate_documents([([[2, 3, 4], [5, 6]], 0), ([[7]], 1)])
    torch.testing.assert_close(forward_batch(old, batch).logits, forward_batch(before, batch).logits)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attention_distribution": "relu"}, "attention_distribution must be one of"),
        ({"task_scaling": "big"}, "task_scaling must be one of"),
        ({"encoder_diversity": -1.0}, "encoder_diversity must be >= 0"),
        ({"model": "pooled", "pooling": "mean", "attention_distribution": "sparsemax"}, "not mean pooling"),
        ({"model": "pooled", "pooling": "max", "task_scaling": "lin"}, "not max pooling"),
        ({"attention_padding": "renormalised", "attention_distribution": "entmax15"}, "renormalised"),
        ({"model": "pooled", "encoder": "none", "encoder_diversity": 0.1}, "give the pooled model an encoder"),
    ],
)
def test_combinations_without_meaning_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        ClassifierConfig(**{**SMALL, **options})


@pytest.mark.parametrize("model", ["han", "pooled"])
def test_the_config_builds_every_pooling_with_its_distribution_and_the_scaling(model):
    for name, kind in (("sparsemax", Sparsemax), ("entmax15", Entmax15)):
        built = build_classifier(ClassifierConfig(model=model, attention_distribution=name, **SMALL), 20)
        poolings = [m for m in built.modules() if isinstance(m, AttentionPooling)]
        assert len(poolings) == (2 if model == "han" else 1) and all(type(p.distribution) is kind for p in poolings)
        assert len({id(p.distribution) for p in poolings}) == len(poolings)  # one module each
    built = build_classifier(ClassifierConfig(model=model, task_scaling="feat", **SMALL), 20)
    assert isinstance(built.task_scaling, FeatTaskScaling) and built.task_scaling.u.shape == (20, 8)


def test_the_uniform_twin_replaces_the_distribution_and_keeps_the_scaling():
    config = ClassifierConfig(attention_distribution="sparsemax", task_scaling="lin", uniform_attention=True, **SMALL)
    built = build_classifier(config, 20)
    assert all(type(m.distribution) is Uniform for m in built.modules() if isinstance(m, AttentionPooling))
    assert isinstance(built.task_scaling, LinTaskScaling)
    assert config.recipe()["attention_distribution"] == "uniform"


@pytest.mark.parametrize("model", ["han", "pooled"])
def test_the_objective_adds_lambda_times_the_penalty(model):
    torch.manual_seed(0)
    built = build_classifier(ClassifierConfig(model=model, encoder_diversity=0.5, **SMALL), 20).eval()
    if model == "han":
        batch = collate_documents([([[2, 3, 4], [5, 6]], 0), ([[7, 8], [9]], 1)])
    else:
        batch = collate_tokens([([2, 3, 4, 5], 0), ([6, 7], 1)])
    objective = classification_objective(built, encoder_diversity=0.5)
    assert isinstance(objective, DiverseEncoderObjective)
    out = forward_batch(built, batch)
    penalty = diversity_penalty(out.encoded)
    assert penalty > 0
    expected = F.cross_entropy(out.logits, batch.labels) + 0.5 * penalty
    torch.testing.assert_close(objective.loss(batch), expected)
    assert objective.evaluate([batch])["loss"] == pytest.approx(F.cross_entropy(out.logits, batch.labels).item())
    plain = classification_objective(built)
    assert type(plain) is CrossEntropyObjective
    torch.testing.assert_close(plain.loss(batch), F.cross_entropy(out.logits, batch.labels))


def test_a_resumed_run_started_before_the_options_keeps_its_config_as_it_started(tmp_path):
    config = ClassifierConfig(**SMALL)
    (tmp_path / "last").mkdir()
    legacy = {
        k: v for k, v in checkpoint_config(config, tmp_path, resume=False).items() if k not in RECIPE_BEFORE_OPTIONS
    }
    (tmp_path / "last" / "config.json").write_text(json.dumps(legacy))
    assert checkpoint_config(config, tmp_path, resume=True) == legacy
    assert set(RECIPE_BEFORE_OPTIONS) <= set(checkpoint_config(config, tmp_path, resume=False))
    changed = ClassifierConfig(**SMALL, task_scaling="lin")  # not as it started: kept, so that resume refuses it
    assert checkpoint_config(changed, tmp_path, resume=True)["task_scaling"] == "lin"


@pytest.mark.parametrize(("name", "width"), [("r8", 256), ("r52", 256), ("fine-foods-han", 64)])
def test_the_re_shipped_classifiers_attend_over_the_word_embeddings(name, width):
    """Re-shipped under issue #38 with a per-word value layer (r8 and r52: 4 heads of 256 units; the HAN: 64): the
    config says so, and loading builds the model so."""
    import attnkit

    model = attnkit.load(name)
    heads = model.config.heads if model.config.model == "pooled" else 1
    assert (model.config.recipe()["attention_values"], model.config.recipe()["value_layer"]) == ("embeddings", width)
    assert model.model.attention_values == "embeddings" and model.model.classifier.in_features == heads * width
