"""The faithfulness tests on one emitted token of RNN and Transformer seq2seq models: the units are the source
tokens; ``delete`` equals the forward of the shortened source; Transformers get rollout and flow; IG is complete."""

from __future__ import annotations

import pytest
import torch

from attnkit.data.seq2seq.vocab import BOS_ID
from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.models.rnn_seq2seq import build_rnn_seq2seq
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq
from attnkit.tasks.seq2seq.faithfulness import Seq2SeqStepSubject

pytest.importorskip("captum", reason="the gradient methods need Captum (pip install 'attnkit[faithfulness]')")

SOURCE = [5, 9, 12, 7, 20, 6]
TARGET = [8, 4, 11, 2]
VOCAB = [f"v{i}" for i in range(24)]


def _model(kind: str):
    torch.manual_seed(0)
    if kind == "rnn":
        model = build_rnn_seq2seq(24, 24, embed_dim=16, hidden_dim=16, dropout=0.0)
    else:
        model = TransformerSeq2Seq(
            24, 24, dim=16, heads=2, encoder_layers=2, decoder_layers=1, dropout=0.0, share_embeddings=True
        )
    return model.eval()


def _subject(model, step: int = 2) -> Seq2SeqStepSubject:
    return Seq2SeqStepSubject(model, SOURCE, TARGET, step, [f"s{i}" for i in range(len(SOURCE))], VOCAB)


@pytest.mark.parametrize("kind", ["rnn", "transformer"])
def test_delete_equals_the_forward_of_the_shortened_source(kind):
    model = _model(kind)
    subject = _subject(model)
    keep = torch.tensor([[True, False, True, True, False, True], [False] * 5 + [True], [True] * 6])
    batched = subject.probabilities_when(keep, "delete")  # [3, V]
    target_in = torch.tensor([[BOS_ID, *TARGET[:2]]])
    for row in range(3):
        short = torch.tensor([[t for t, k in zip(SOURCE, keep[row].tolist(), strict=True) if k]])
        with torch.no_grad():
            logits = model(short, torch.ones_like(short, dtype=torch.bool), target_in).logits[0, 2]
        torch.testing.assert_close(batched[row], torch.softmax(logits, -1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(batched[2], subject.probabilities, rtol=1e-5, atol=1e-6)


def test_every_method_on_a_transformer_step_and_mask_erasure_only_where_it_means_something():
    transformer = _model("transformer")
    result = faithfulness_of([_subject(transformer)], erase="mask")[0]
    assert list(result.methods) == [
        "attention", "rollout", "flow", "gradient_x_input", "integrated_gradients", "leave_one_out", "random",
    ]  # fmt: skip
    assert len(result.tokens) == 6 and result.label in VOCAB
    assert result.methods["integrated_gradients"].convergence_delta < 1e-3
    assert sum(result.methods["attention"].scores) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match="an RNN encoder reads every token"):
        _subject(_model("rnn")).probabilities_when(torch.ones(1, 6, dtype=torch.bool), "mask")


def test_rnn_step_has_attention_but_no_rollout_and_repeats_under_a_seed():
    subject = _subject(_model("rnn"), step=0)
    first = faithfulness_of([subject], erase="unk", seed=1)[0]
    assert "rollout" not in first.methods and "attention" in first.methods
    assert first.to_json() == faithfulness_of([subject], erase="unk", seed=1)[0].to_json()
