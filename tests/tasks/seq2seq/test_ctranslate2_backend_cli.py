"""``attnkit evaluate --backend ctranslate2``, ``attnkit translate --n-best`` (both backends) and ``attnkit experiment
deploy``, on the small dates Transformer of ``tests/tasks/seq2seq/conftest.py``: an export is scored exactly as its checkpoint
is, the float32 export's n-best lists are attnkit's, and every misuse is one ``attnkit: error:`` line."""

from __future__ import annotations

import json
import sys

import pytest

import attnkit
from _near_ties import assert_equal_but_near_ties
from attnkit.cli import main

pytest.importorskip("ctranslate2", reason="ctranslate2 (the deploy extra) is not installed")

NEAR_TIES = 1  # items whose decoding two runtimes' float32 kernels may part on another CPU (tests/_near_ties.py)
TEXTS = ["4 March 1997", "03/04/1997", "July 1st, 2001", "1 janvier 2010", "Sunday, 9 May 1965"]


@pytest.fixture(scope="module")
def exported(dates_transformer, tmp_path_factory):
    """``(run directory, its float32 export, a TSV of 40 dates pairs)``."""
    from attnkit.data.seq2seq import load_data_set

    root = dates_transformer
    out = tmp_path_factory.mktemp("backend") / "ct2"
    assert main(["export", "--checkpoint", str(root / "run"), "--out", str(out)]) == 0
    pairs = load_data_set("dates", train_size=0, valid_size=0, test_size=40).test
    tsv = out.parent / "pairs.tsv"
    tsv.write_text("source\ttarget\n" + "".join(f"{s}\t{t}\n" for s, t in pairs))
    return root / "run", out, tsv


def _json(capsys, argv: list[str]):
    capsys.readouterr()
    assert main(argv) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("beam", ["1", "4"])
def test_evaluate_scores_an_export_exactly_as_its_checkpoint(exported, capsys, beam):
    run, export, tsv = exported
    options = ["--data", str(tsv), "--beam", beam, "--json", "--threads", "1"]
    [native] = _json(capsys, ["evaluate", "--checkpoint", str(run), *options])
    [ours] = _json(capsys, ["evaluate", "--backend", "ctranslate2", "--checkpoint", str(export), *options])
    assert ours["backend"] == "ctranslate2" and ours["weights"] == "float32"
    assert ours["data"] == native["data"] and ours["decoding"] == native["decoding"]
    assert ours["count"] == native["count"]
    # the same scorer over decodings that may part on a near tie (two runtimes' float32 kernels, another CPU):
    # equal figures where every item decodes alike; each parted item moves WER and exact match by 100 / count
    sources = [line.split("\t")[0] for line in tsv.read_text().splitlines()[1:]]
    decoded = [
        [t.text for t in attnkit.load(path, device="cpu").translate(sources, beam_size=int(beam))]
        for path in (export, run)
    ]
    parted = len(assert_equal_but_near_ties(*decoded, allowed=NEAR_TIES, what="translations"))
    for key in ("wer", "per", "exact_match") if not parted else ("wer", "exact_match"):
        assert abs(ours[key] - native[key]) <= parted * 100 / native["count"] + 1e-9, key
    assert native["per"] > 0  # the tiny model errs (WER 100: its dates are wrong), so equal PER means equal errors
    assert ours["decode_seconds"] > 0 and "loss" not in ours
    capsys.readouterr()
    assert main(["evaluate", "--backend", "ctranslate2", "--checkpoint", str(export), "--data", str(tsv)]) == 0
    line = capsys.readouterr().out
    assert f"WER {native['wer']:.2f}%" in line and "CTranslate2, float32 weights" in line and "decoded in" in line


def _refused(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith("attnkit: error: ")
    return captured.err


def test_evaluate_with_ctranslate2_refuses_what_does_not_apply_in_one_line(exported, capsys, monkeypatch):
    run, export, tsv = exported
    ct2 = ["evaluate", "--backend", "ctranslate2", "--data", str(tsv)]
    assert "not an attnkit CTranslate2 export" in _refused(capsys, [*ct2, "--checkpoint", str(run / "best")])
    assert "no ensembles" in _refused(capsys, [*ct2, "--checkpoint", str(export), str(export)])
    assert "--precision bf16" in _refused(capsys, [*ct2, "--checkpoint", str(export), "--precision", "bf16"])
    assert "--n-best" not in _refused(capsys, [*ct2, "--checkpoint", str(export), "--beam", "0"])
    translate = ["translate", "--backend", "ctranslate2", "--checkpoint", str(export), "--text", "1 May 1990"]
    assert "--precision fp16" in _refused(capsys, [*translate, "--precision", "fp16"])
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import ctranslate2_device

    assert [ctranslate2_device(d) for d in ("auto", "cpu", "cuda:1")] == [("auto", 0), ("cpu", 0), ("cuda", 1)]
    with pytest.raises(ValueError, match="--device mps: the ctranslate2 backend runs on auto, cpu, cuda or cuda:N"):
        ctranslate2_device("mps")  # (this machine refuses mps before the backend sees it)
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # as if the package were not installed
    assert "pip install 'attnkit[deploy]'" in _refused(capsys, [*ct2, "--checkpoint", str(export)])


def test_n_best_lists_of_the_float32_export_are_attnkit_s(exported, capsys):
    run, export, _ = exported
    texts = [option for text in TEXTS for option in ("--text", text)]
    nbest = ["--beam", "4", "--n-best", "3", "--json", *texts]
    native = _json(capsys, ["translate", "--checkpoint", str(run), *nbest])
    ours = _json(capsys, ["translate", "--backend", "ctranslate2", "--checkpoint", str(export), *nbest])
    assert len(native) == len(ours) == len(TEXTS)
    lists = [[[h["target_tokens"] for h in record["n_best"]] for record in side] for side in (ours, native)]
    parted = assert_equal_but_near_ties(*lists, allowed=NEAR_TIES, what="n-best lists")  # another CPU's near tie
    for row, (mine, theirs) in enumerate(zip(ours, native, strict=True)):
        assert len(mine["n_best"]) == len(theirs["n_best"]) == 3
        if row not in parted:
            mine_scores, their_scores = ([h["score"] for h in r["n_best"]] for r in (mine, theirs))
            assert mine_scores == pytest.approx(their_scores, abs=1e-3)
        for record in (mine, theirs):
            scores = [h["score"] for h in record["n_best"]]
            assert scores == sorted(scores, reverse=True)
            assert record["n_best"][0]["target_tokens"] == record["target_tokens"]
            assert record["n_best"][0]["translation"] == record["translation"]
    assert len({h["translation"] for h in native[0]["n_best"]}) == 3  # three distinct hypotheses


@pytest.mark.parametrize("backend", ["native", "ctranslate2"])
def test_n_best_plain_text_and_n_1_is_the_one_best_output(exported, capsys, backend):
    run, export, tsv = exported
    checkpoint = ["--checkpoint", str(export if backend == "ctranslate2" else run), "--backend", backend]
    source = tsv.parent / "sources.txt"
    source.write_text("4 March 1997\n\n03/04/1997\n")
    capsys.readouterr()
    assert main(["translate", *checkpoint, "--beam", "4", "--file", str(source)]) == 0
    one_best = capsys.readouterr().out
    assert main(["translate", *checkpoint, "--beam", "4", "--n-best", "1", "--file", str(source)]) == 0
    assert capsys.readouterr().out == one_best and one_best.count("\n") == 3  # the blank line kept
    assert main(["translate", *checkpoint, "--beam", "4", "--n-best", "2", "--file", str(source)]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [index for index, _, _ in lines] == ["0", "0", "2", "2"]  # input line numbers; the blank one prints none
    assert [lines[0][2], lines[2][2]] == [line for line in one_best.splitlines() if line]
    assert float(lines[0][1]) >= float(lines[1][1]) and float(lines[2][1]) >= float(lines[3][1])
    assert "--n-best must lie in [1, --beam] = [1, 4], got 5" in _refused(
        capsys, ["translate", *checkpoint, "--beam", "4", "--n-best", "5", "--text", "x"]
    )
    assert "[1, 1], got 2" in _refused(capsys, ["translate", *checkpoint, "--n-best", "2", "--text", "x"])


def test_native_n_best_extends_the_one_best_beam_output(exported):
    """``translate(num_hypotheses=n)``: the translation is unchanged, ``n_best[0]`` is it, the rest is the beam's."""
    import torch

    import attnkit
    from attnkit.data.seq2seq import collate_pairs
    from attnkit.decoding import beam_search

    loaded = attnkit.load(exported[0], device="cpu")
    plain, three = loaded.translate(TEXTS, beam_size=4), loaded.translate(TEXTS, beam_size=4, num_hypotheses=3)
    assert [(t.text, t.score, t.token_ids) for t in plain] == [(t.text, t.score, t.token_ids) for t in three]
    assert all(len(t.n_best) == 1 and t.n_best[0].token_ids == t.token_ids for t in plain)
    batch = collate_pairs([(ids, None) for ids in loaded.source_tokenizer.encode_batch(TEXTS)])
    with torch.no_grad():
        out = beam_search(loaded.model, batch.source_ids, batch.source_mask, beam_size=4)
    for i, translation in enumerate(three):
        assert [h.token_ids for h in translation.n_best] == [
            out.tokens[i, k, : out.lengths[i, k]].tolist() for k in range(3)
        ]
        assert [h.score for h in translation.n_best] == sorted((h.score for h in translation.n_best), reverse=True)
    with pytest.raises(ValueError, match="num_hypotheses"):
        loaded.translate(TEXTS, num_hypotheses=2)  # greedy keeps one hypothesis


def test_experiment_deploy_writes_one_section_per_dataset(exported, tmp_path, capsys):
    run, _, _ = exported
    docs = tmp_path / "docs"
    (docs / "results").mkdir(parents=True)
    bible = {"metrics": "text", "data": "bible-en-es test split", "count": 3, "decoding": "greedy"}
    bible |= {"command": "attnkit experiment deploy --data bible-en-es ...", "threads": 1, "batch_size": 64}
    bible |= {"rounds": 3, "date": "2026-11-24", "versions": {"torch": "t", "ctranslate2": "c"}}
    bible["rows"] = {
        "native": {"bleu": 30.0, "chrf": 50.0, "seconds_min": 9.0, "seconds_median": 10.0}
        | {"throughput_vs_native": 1.0, "same_output_as_native": 100.0},
    }
    (docs / "results" / "deploy.json").write_text(json.dumps({"bible-en-es": bible}))
    argv = ["experiment", "deploy", "--data", "dates", "--checkpoint", str(run), "--threads", "1", "--rounds", "2"]
    assert main([*argv, "--docs", str(docs), "--runs", str(tmp_path / "runs")]) == 0
    summary = json.loads((docs / "results" / "deploy.json").read_text())
    assert summary["bible-en-es"] == bible  # another dataset's section is kept
    section = summary["dates"]
    assert section["count"] == 1000 and section["rounds"] == 2 and section["threads"] == 1
    rows = section["rows"]
    assert list(rows) == ["native", "native int8", "ctranslate2 float32", "ctranslate2 int8"]
    assert "each side a fresh process" in section["timing"] and len(section["load_average_before_round"]) == 2
    assert all(len(row["seconds"]) == 2 and row["seconds_min"] > 0 for row in rows.values())
    assert rows["native"]["throughput_vs_native"] == 1.0 and rows["native"]["same_output_as_native"] == 100.0
    assert rows["ctranslate2 float32"]["same_output_as_native"] >= 99.0  # float32: attnkit's tokens up to rounding
    assert abs(rows["ctranslate2 float32"]["wer"] - rows["native"]["wer"]) <= 0.2
    assert abs(rows["ctranslate2 int8"]["wer"] - rows["native"]["wer"]) <= 10.0  # int8 is judged by its WER
    assert abs(rows["native int8"]["wer"] - rows["native"]["wer"]) <= 10.0
    page = (docs / "results.md").read_text()
    assert "### dates: dates test split (1,000 sources, greedy)" in page and "### bible-en-es" in page
    assert "| CTranslate2, int8 export |" in page and "| attnkit, `--quantize int8` |" in page
    assert "each side a fresh process" in page
    assert "Decode times withdrawn" in page and "| test BLEU | test chrF | output identical" in page  # bible: old
    assert not (tmp_path / "runs").exists()  # the exports go to a temporary directory
    assert "trained on 'dates'" in _refused(capsys, [*argv[:3], "cmudict", *argv[4:], "--docs", str(docs)])
