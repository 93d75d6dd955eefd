"""Token-level distillation: the loss against a teacher's distributions, worked out by hand (end to end with
``--distill-token-weight``: ``test_distill``)."""

import math

import pytest
import torch

from attnkit.data.seq2seq import PAD_ID
from attnkit.tasks.run.plan import ADDED_LATER
from attnkit.tasks.seq2seq.distill.options import ADDED_LATER as DISTILL_ADDED_LATER
from attnkit.tasks.seq2seq.objective import Seq2SeqObjective, distribution_matching_loss


def test_the_loss_is_the_teachers_cross_entropy_and_ignores_padding():
    teacher = torch.log(torch.tensor([[[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]]))  # [1, 2, 3]
    student = torch.zeros(1, 2, 3, requires_grad=True)  # uniform
    targets = torch.tensor([[1, PAD_ID]])  # the second position is padding
    loss = distribution_matching_loss(student, teacher, targets)
    assert loss.item() == pytest.approx(math.log(3))  # -sum p_T log(1/3)
    loss.backward()
    expected = torch.tensor([[[1 / 3 - 0.5, 1 / 3 - 0.25, 1 / 3 - 0.25], [0.0, 0.0, 0.0]]])  # p_S - p_T, real rows
    torch.testing.assert_close(student.grad, expected)


def test_a_student_equal_to_its_teacher_has_no_gradient_from_it():
    teacher = torch.randn(2, 4, 7)
    student = teacher.clone().requires_grad_(True)
    targets = torch.tensor([[3, 4, 5, 6], [3, 4, PAD_ID, PAD_ID]])
    entropy = -(teacher.softmax(-1) * teacher.log_softmax(-1)).sum(-1)[targets != PAD_ID].mean()
    loss = distribution_matching_loss(student, teacher, targets)
    loss.backward()
    assert loss.item() == pytest.approx(entropy.item(), rel=1e-5)
    assert student.grad.abs().max() < 1e-6


def test_a_teacher_weight_needs_a_teacher_and_the_unit_interval():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="teacher_weight must lie in"):
        Seq2SeqObjective(model, None, teacher_weight=0.5)
    with pytest.raises(ValueError, match="teacher_weight must lie in"):
        Seq2SeqObjective(model, None, teacher=model, teacher_weight=1.5)


def test_every_distill_option_resumes_runs_started_before_it():
    assert DISTILL_ADDED_LATER.items() <= ADDED_LATER.items()
