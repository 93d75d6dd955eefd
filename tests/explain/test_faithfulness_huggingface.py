"""The faithfulness tests on a Hugging Face sequence classifier: a tiny BERT built from a config and a WordPiece
tokenizer built from a word list, saved to a temporary directory (nothing is downloaded)."""

from __future__ import annotations

import json
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("captum")

from attnkit.cli import main  # noqa: E402
from attnkit.explain.faithfulness import huggingface  # noqa: E402
from attnkit.explain.faithfulness.methods import attention_flow  # noqa: E402
from attnkit.explain.rollout import attention_rollout  # noqa: E402

WORDS = ["the", "tea", "is", "great", "awful", "lovely", "not", "coffee", "stale", "fresh", "and", "very"]
PIECES = ["##s", "##ly", "##er", "##est"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TEXT = "the teas is lovelyly and very fresher"  # 7 words, 10 pieces


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = {token: index for index, token in enumerate(SPECIAL + WORDS + PIECES)}
    backend = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    backend.decoder = decoders.WordPiece()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A local directory holding a tiny random BERT classifier (3 classes) and its tokenizer."""
    directory = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = _tokenizer()
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(SPECIAL + WORDS + PIECES),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=3,
        id2label={0: "bad", 1: "fine", 2: "great"},
        label2id={"bad": 0, "fine": 1, "great": 2},
    )
    model = transformers.BertForSequenceClassification(config).eval()
    with torch.no_grad():  # a sharper random model: larger logits, so erasures move the prediction
        model.classifier.weight.mul_(20.0)
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def loaded(saved):
    return huggingface.load_local(saved)


def _probabilities(model, tokenizer, text: str) -> torch.Tensor:
    encoding = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return torch.softmax(model(**encoding).logits, -1)[0]


def test_units_are_words_and_pieces_are_summed(loaded):
    model, tokenizer = loaded
    subject = huggingface.HuggingFaceSubject(model, tokenizer, TEXT)
    assert subject.tokens == TEXT.split()
    assert len(subject.ids) == 12  # [CLS] + 10 pieces + [SEP]
    scores = subject.attention_scores()
    with torch.no_grad():
        out = model(**tokenizer(TEXT, return_tensors="pt"), output_attentions=True)
    last = out.attentions[-1][0, :, 0].mean(0)  # [P]: the [CLS] row, heads averaged
    # every word's score is the sum over its pieces: words and the special tokens share the row's mass
    assert torch.isclose(scores["attention"].sum() + last[0] + last[-1], torch.tensor(1.0), atol=1e-5)
    assert torch.isclose(scores["attention"][1], last[2] + last[3], atol=1e-6)  # "teas" = tea + ##s
    pieces_of = [[1], [2, 3], [4], [5, 6], [7], [8], [9, 10]]  # each word's pieces
    rolled = attention_rollout(list(out.attentions))[0, 0]  # [P]: what flows into [CLS] from each piece
    assert torch.allclose(scores["rollout"], torch.stack([rolled[p].sum() for p in pieces_of]).float(), atol=1e-6)
    readout = torch.zeros(12, dtype=torch.float64)
    readout[0] = 1.0
    flow = attention_flow([a[0] for a in out.attentions], readout)  # [P]
    assert torch.allclose(scores["flow"], torch.stack([flow[p].sum() for p in pieces_of]).float(), atol=1e-6)
    assert (flow <= 1 + 1e-6).all()  # no piece sends more than the read-out takes


@pytest.mark.parametrize("erased", [0, 1, 3, 6])
def test_deleting_a_word_equals_the_forward_of_the_shortened_text(loaded, erased):
    model, tokenizer = loaded
    subject = huggingface.HuggingFaceSubject(model, tokenizer, TEXT)
    keep = torch.ones(2, 7, dtype=torch.bool)
    keep[0, erased] = False
    keep[1, [erased, (erased + 2) % 7]] = False  # two variants of different lengths in one padded batch
    got = subject.probabilities_when(keep, "delete")
    words = TEXT.split()
    one = " ".join(w for i, w in enumerate(words) if i != erased)
    two = " ".join(w for i, w in enumerate(words) if i not in (erased, (erased + 2) % 7))
    assert torch.allclose(got[0], _probabilities(model, tokenizer, one), atol=1e-6)
    assert torch.allclose(got[1], _probabilities(model, tokenizer, two), atol=1e-6)


def test_mask_and_unk_erasure_keep_positions(loaded):
    model, tokenizer = loaded
    subject = huggingface.HuggingFaceSubject(model, tokenizer, TEXT)
    keep = torch.ones(1, 7, dtype=torch.bool)
    keep[0, 3] = False  # "lovelyly": pieces 5 and 6
    ids, mask = subject.variants(keep, "mask")
    assert ids.tolist() == [subject.ids.tolist()] and mask[0].tolist() == [1] * 5 + [0, 0] + [1] * 5
    ids, mask = subject.variants(keep, "unk")
    assert ids[0, 5] == ids[0, 6] == tokenizer.unk_token_id and mask.all()
    encoding = tokenizer(TEXT, return_tensors="pt")
    encoding["attention_mask"][0, 5:7] = 0
    with torch.no_grad():
        expected = torch.softmax(model(**encoding).logits, -1)[0]
    assert torch.allclose(subject.probabilities_when(keep, "mask")[0], expected, atol=1e-6)
    assert torch.allclose(
        subject.probabilities_when(torch.ones(1, 7, dtype=torch.bool), "delete")[0], subject.probabilities, atol=1e-6
    )


def test_integrated_gradients_are_complete_over_the_words(loaded):
    from attnkit.explain.faithfulness.gradients import integrated_gradients

    model, tokenizer = loaded
    subject = huggingface.HuggingFaceSubject(model, tokenizer, TEXT)
    inputs = subject.gradient_inputs()
    assert inputs.embeddings.shape == (1, 10, 32)  # the word pieces only: [CLS] and [SEP] stay as they are
    result = integrated_gradients(inputs, subject.label, steps=64)
    with torch.no_grad():
        start = inputs.forward(torch.zeros_like(inputs.embeddings))[0, subject.label]
        end = inputs.forward(inputs.embeddings)[0, subject.label]
    assert torch.isclose(end, subject.probabilities[subject.label], atol=1e-6)
    assert result.convergence_delta < 0.02
    assert math.isclose(float(result.scores.sum()), float(end - start), abs_tol=0.02)


def test_faithfulness_repeats_under_a_seed_and_reports_every_method(loaded):
    model, tokenizer = loaded
    texts = [TEXT, "stale coffee , not great", "lovely"]
    first = huggingface.faithfulness(model, tokenizer, texts, steps=8, seed=3)
    again = huggingface.faithfulness(model, tokenizer, texts, steps=8, seed=3)
    assert [r.to_json() for r in first] == [r.to_json() for r in again]
    record = first[0].to_json()
    assert set(record["methods"]) == {
        "attention",
        "rollout",
        "flow",
        "gradient_x_input",
        "integrated_gradients",
        "leave_one_out",
        "random",
    }
    assert record["tokens"] == TEXT.split() and record["label"] in ("bad", "fine", "great")
    loo = first[0].methods["leave_one_out"]
    # leave-one-out's top word, erased alone, is the largest single-word drop: comprehensiveness at 1 % says so
    assert math.isclose(loo.comprehensiveness["1"], max(loo.scores), abs_tol=1e-5)
    assert first[2].tokens == ["lovely"]


def test_eager_attention_is_switched_on_and_restored(saved):
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(saved), local_files_only=True, attn_implementation="sdpa"
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(saved), local_files_only=True)
    result = huggingface.faithfulness(model, tokenizer, ["the tea is great"], methods=["attention", "random"])
    assert len(result[0].methods["attention"].scores) == 4
    assert model.config._attn_implementation == "sdpa"


def test_cli_json_and_report(saved, tmp_path, capsys):
    report = tmp_path / "report.html"
    argv = ["faithfulness", "--hf-model", str(saved), "--text", TEXT, "--text", "stale tea", "--json"]
    assert main([*argv, "--steps", "4", "--report", str(report)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line)["tokens"] for line in lines] == [TEXT.split(), ["stale", "tea"]]
    page = report.read_text()
    assert page.count('data-method="rollout"') >= 2 and "lovelyly" in page and "<script" not in page
    assert 'data-method="integrated_gradients"' in page


def test_cli_refuses_a_missing_directory_in_one_line(tmp_path, capsys):
    assert main(["faithfulness", "--hf-model", str(tmp_path / "nowhere"), "--text", "tea"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnkit: error:") and "nowhere" in err[0]
    assert main(["faithfulness", "--hf-model", str(tmp_path), "--text", "tea"]) == 2
    assert "config.json" in capsys.readouterr().err


def _damaged(saved, tmp_path, damage):
    import shutil

    directory = tmp_path / "model"
    shutil.copytree(saved, directory)
    damage(directory)
    return directory


def _cut_weights(directory):
    weights = directory / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])


def _no_tokenizer(directory):
    for path in directory.iterdir():
        if path.name.startswith(("tokenizer", "vocab", "special_tokens")):
            path.unlink()


def _config_field(**fields):
    def damage(directory):
        config = json.loads((directory / "config.json").read_text())
        config.update(fields)
        (directory / "config.json").write_text(json.dumps({k: v for k, v in config.items() if v is not None}))

    return damage


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_cut_weights, "model.safetensors: 8"),
        (lambda d: (d / "model.safetensors").write_bytes(b"\x05"), "model.safetensors: not a whole safetensors file"),
        (_no_tokenizer, "no tokenizer files (tokenizer.json, vocab.txt, ...)"),
        (_config_field(model_type="nonsense"), "config.json: model_type 'nonsense' is not one this transformers knows"),
        (_config_field(model_type=None), "config.json: no 'model_type' field"),
        (lambda d: (d / "model.safetensors").unlink(), "no weights file (model.safetensors or pytorch_model.bin)"),
    ],
)
def test_a_damaged_hf_directory_is_one_error_line_naming_the_file(saved, tmp_path, capsys, damage, expected):
    directory = _damaged(saved, tmp_path, damage)
    assert main(["faithfulness", "--hf-model", str(directory), "--text", "the tea"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnkit: error:") and expected in err[0], err
    assert captured.out == ""


def test_a_tokenizer_that_knows_only_special_tokens_is_refused(tmp_path):
    from attnkit.explain.faithfulness.hf_directory import check_tokenizer

    class Specials:
        all_special_ids = (0, 1, 2)

        def __len__(self):
            return 3

    with pytest.raises(OSError, match="knows only special tokens"):
        check_tokenizer(tmp_path, Specials())
