"""ClassifierEnsemble: the members' class probabilities averaged, scored by hand-computable cases."""

import math

import pytest
import torch

from attnkit.tasks.classify.ensemble import ClassifierEnsemble


class FixedMember:
    """A stand-in classifier that gives fixed probabilities, one row per text in the order given."""

    def __init__(self, rows, label_names=("neg", "pos")):
        self.rows = {f"t{i}": row for i, row in enumerate(rows)}
        self.label_names = list(label_names)

    def probabilities(self, texts, *, batch_size=64):
        return torch.tensor([self.rows[text] for text in texts])  # [N, C]

    def label_ids(self, labels):
        index = {name: i for i, name in enumerate(self.label_names)}
        unknown = sorted(set(labels) - set(index))
        if unknown:
            raise ValueError(f"labels {unknown} are not among the checkpoint's classes")
        return [index[label] for label in labels]


def test_probabilities_are_the_members_mean():
    a = FixedMember([[0.9, 0.1], [0.4, 0.6]])
    b = FixedMember([[0.2, 0.8], [0.3, 0.7]])
    got = ClassifierEnsemble([a, b]).probabilities(["t0", "t1"])
    assert torch.allclose(got, torch.tensor([[0.55, 0.45], [0.35, 0.65]]))


def test_evaluate_scores_the_averaged_probabilities_not_a_vote():
    # member a is sure of neg on t0, b mildly prefers pos: the mean says neg (0.55), so t0 (gold pos) is wrong
    a = FixedMember([[0.9, 0.1], [0.4, 0.6]])
    b = FixedMember([[0.2, 0.8], [0.3, 0.7]])
    report = ClassifierEnsemble([a, b]).evaluate(["t0", "t1"], ["pos", "pos"])
    assert report["accuracy"] == 50.0 and report["count"] == 2 and report["members"] == 2
    assert report["loss"] == pytest.approx(-(math.log(0.45) + math.log(0.65)) / 2, rel=1e-5)
    assert report["confusion"] == [[0, 0], [1, 1]]


def test_one_member_is_that_member():
    a = FixedMember([[0.3, 0.7], [0.8, 0.2], [0.6, 0.4]])
    report = ClassifierEnsemble([a]).evaluate(["t0", "t1", "t2"], ["pos", "neg", "pos"])
    assert report["accuracy"] == pytest.approx(200 / 3)
    assert report["loss"] == pytest.approx(-(math.log(0.7) + math.log(0.8) + math.log(0.4)) / 3, rel=1e-5)


def test_members_of_other_classes_or_none_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        ClassifierEnsemble([])
    with pytest.raises(ValueError, match="member 1's classes"):
        ClassifierEnsemble([FixedMember([[1.0, 0.0]]), FixedMember([[1.0, 0.0]], label_names=("pos", "neg"))])
    with pytest.raises(ValueError, match="not among"):
        ClassifierEnsemble([FixedMember([[1.0, 0.0]])]).evaluate(["t0"], ["maybe"])
    with pytest.raises(ValueError, match="2 items but labels has 1"):
        ClassifierEnsemble([FixedMember([[1.0, 0.0], [0.0, 1.0]])]).evaluate(["t0", "t1"], ["pos"])
