"""``attnkit train seq2seq --distill-from``: a student trained on its teacher's beam outputs learns them, not the
gold; the teacher's outputs are decoded once (the cache is read again by ``--resume``), a damaged or foreign cache
file is decoded again, unlabelled sources never include a source of the task's splits, and mistakes are one line.

The toy task: gold targets are the words in upper case; the teacher was trained on the same words reversed (the
same characters, so the same vocabularies), so whatever it outputs is not the gold."""

import json
import random
import shutil

import pytest

from attnkit.cli import main
from attnkit.tasks.seq2seq.distill import student as student_module
from attnkit.tasks.seq2seq.distill import teachers as teachers_module
from attnkit.tasks.seq2seq.distill.teachers import load_teachers, teacher_outputs
from attnkit.tasks.seq2seq.distill.unlabelled import english_words
from attnkit.tasks.seq2seq.inference import load_seq2seq
from attnkit.tasks.seq2seq.objective import distribution_matching_loss

pytestmark = pytest.mark.usefixtures("one_thread")

MODEL = [
    "--model", "rnn", "--cell", "lstm", "--attention", "luong-general", "--embed-dim", "16", "--hidden", "32",
    "--dropout", "0", "--batch-size", "16", "--lr", "0.01", "--threads", "1", "--no-progress",
]  # fmt: skip


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test its own ``$ATTNKIT_CACHE`` (the teachers' outputs are kept there)."""
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))


def _write(path, words, target):
    path.write_text("source\ttarget\n" + "".join(f"{w}\t{target(w)}\n" for w in words), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """400 words of 3-5 letters a-h (320 train, 40 valid, 40 test): gold files (upper case) and a teacher trained
    on the same words reversed."""
    root = tmp_path_factory.mktemp("distill")
    rng = random.Random(0)
    words: set[str] = set()
    while len(words) < 400:
        words.add("".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 5))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    splits = {"train": ordered[:320], "valid": ordered[320:360], "test": ordered[360:]}
    gold = {name: _write(root / f"gold_{name}.tsv", ws, str.upper) for name, ws in splits.items()}
    reverse = {name: _write(root / f"rev_{name}.tsv", ws, lambda w: w[::-1].upper()) for name, ws in splits.items()}
    teacher = root / "teacher"
    argv = ["train", "seq2seq", "--data", reverse["train"], "--valid", reverse["valid"], "--test", reverse["test"]]
    assert main([*argv, *MODEL, "--epochs", "8", "--no-test", "--out", str(teacher)]) == 0
    return {"root": root, "splits": splits, "gold": gold, "teacher": teacher}


def gold_data(toy):
    gold = toy["gold"]
    return ["--data", gold["train"], "--valid", gold["valid"], "--test", gold["test"]]


def test_the_student_learns_the_teachers_outputs_not_the_gold(toy):
    out = toy["root"] / "student"
    argv = ["train", "seq2seq", *gold_data(toy), *MODEL, "--epochs", "8", "--patience", "8", "--no-test"]
    assert main([*argv, "--distill-from", str(toy["teacher"]), "--out", str(out)]) == 0
    words = toy["splits"]["train"]
    teacher = [t.text for t in load_seq2seq(toy["teacher"], device="cpu").translate(words, beam_size=5)]
    student = [t.text for t in load_seq2seq(out / "last", device="cpu").translate(words, beam_size=5)]
    agree = sum(s == t for s, t in zip(student, teacher, strict=True)) / len(words)
    gold = sum(s == w.upper() for s, w in zip(student, words, strict=True)) / len(words)
    teacher_gold = sum(t == w.upper() for t, w in zip(teacher, words, strict=True)) / len(words)
    assert teacher_gold < 0.15  # palindromes only: the teacher's outputs are not the gold
    assert agree >= 0.8 and gold <= teacher_gold + 0.05, (agree, gold)
    record = json.loads((out / "metrics.json").read_text())["details"]["distill"]
    assert record["teachers"] == [str(toy["teacher"])] and record["beam_size"] == 5 and not record["gold"]
    assert record["labelled_sources"] == 320 and record["training_pairs"] == 320 and record["unlabelled"] is None
    config = json.loads((out / "best" / "config.json").read_text())  # what a card reads
    assert config["distillation"] == {"teachers": [str(toy["teacher"])], "sha256": record["sha256"], "beam_size": 5,
                                      "length_penalty": 1.0, "gold": False, "token_weight": 0.0,
                                      "labelled_sources": 320, "unlabelled": None}  # fmt: skip


def _counting(monkeypatch) -> list[int]:
    """Count the teachers' decoding calls (and the sources each decodes)."""
    calls: list[int] = []
    decode = teachers_module.decode_sources

    def counted(loaded, sources, **options):
        calls.append(len(sources))
        return decode(loaded, sources, **options)

    monkeypatch.setattr(teachers_module, "decode_sources", counted)
    return calls


def test_resume_reads_the_cache_instead_of_decoding_again(toy, tmp_path, monkeypatch, capsys):
    calls = _counting(monkeypatch)
    out, teacher = tmp_path / "run", tmp_path / "teacher"
    shutil.copytree(toy["teacher"] / "best", teacher)
    argv = ["train", "seq2seq", *gold_data(toy), *MODEL, "--no-test", "--distill-from", str(teacher)]
    assert main([*argv, "--epochs", "1", "--out", str(out)]) == 0
    assert calls == [320]
    assert main([*argv, "--epochs", "2", "--out", str(out), "--resume"]) == 0
    assert calls == [320]  # no second decode
    assert "0 decoded now, 320 read from" in capsys.readouterr().out
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2 and metrics["details"]["distill"]["training_pairs"] == 320
    assert main([*argv, "--distill-beam", "3", "--epochs", "3", "--out", str(out), "--resume"]) == 2
    assert "distill_beam: none then, 3 now" in capsys.readouterr().err
    _nudge_weights(teacher)  # the same path, other teachers: refused, not trained on other targets
    assert main([*argv, "--epochs", "3", "--out", str(out), "--resume"]) == 2
    assert "the model differs from the one saved in its config.json (distillation: " in _one_line_error(capsys)


def _nudge_weights(checkpoint) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(checkpoint / "model.safetensors")
    name = next(iter(weights))
    weights[name] = weights[name] + 0.01
    save_file(weights, checkpoint / "model.safetensors")


def test_a_damaged_or_foreign_cache_file_is_decoded_again(toy, tmp_path, monkeypatch):
    calls = _counting(monkeypatch)
    teachers = load_teachers([str(toy["teacher"])], device="cpu")
    words = toy["splits"]["valid"]
    first = teacher_outputs(teachers, words, beam_size=2, cache_root=tmp_path)
    assert (first.decoded, first.cached, calls) == (40, 0, [40])
    (chunk,) = first.directory.glob("chunk-*.json")
    record = json.loads(chunk.read_text())
    record["outputs"][0] = "WRONG"  # the checksum no longer holds
    chunk.write_text(json.dumps(record))
    again = teacher_outputs(teachers, words, beam_size=2, cache_root=tmp_path)
    assert (again.damaged, again.decoded, calls) == (1, 40, [40, 40]) and again.outputs == first.outputs
    other = teacher_outputs(teachers, words, beam_size=3, cache_root=tmp_path)  # other settings: another entry
    assert other.directory != first.directory and calls == [40, 40, 40]
    shutil.copy(next(other.directory.glob("chunk-*.json")), first.directory / "chunk-foreign.json")
    (own,) = [p for p in first.directory.glob("chunk-*.json") if p.name != "chunk-foreign.json"]
    own.unlink()
    foreign = teacher_outputs(teachers, words, beam_size=2, cache_root=tmp_path)  # another key's file: not read
    assert (foreign.damaged, foreign.decoded) == (1, 40) and foreign.outputs == first.outputs
    assert teacher_outputs(teachers, words, beam_size=2, cache_root=tmp_path).decoded == 0


def test_a_run_killed_while_decoding_keeps_the_chunks_it_wrote(toy, tmp_path, monkeypatch):
    teachers = load_teachers([str(toy["teacher"])], device="cpu")
    monkeypatch.setattr(teachers_module, "CHUNK_SOURCES", 16)
    decode, calls = teachers_module.decode_sources, []

    def killed_at_the_third_chunk(loaded, sources, **options):
        calls.append(len(sources))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return decode(loaded, sources, **options)

    monkeypatch.setattr(teachers_module, "decode_sources", killed_at_the_third_chunk)
    words = toy["splits"]["test"]  # 40 sources: chunks of 16, 16, 8
    with pytest.raises(KeyboardInterrupt):
        teacher_outputs(teachers, words, beam_size=2, cache_root=tmp_path)
    monkeypatch.setattr(teachers_module, "decode_sources", decode)
    labels = teacher_outputs(teachers, words, beam_size=2, cache_root=tmp_path)
    assert (labels.cached, labels.decoded, labels.damaged) == (32, 8, 0)
    assert not [p for p in labels.directory.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_unlabelled_sources_never_include_a_source_of_the_splits(toy, tmp_path, monkeypatch):
    splits = toy["splits"]
    held = [splits["valid"][0], splits["test"][0], splits["train"][0]]
    new = ["abcdefgha", "hgfedcbah", "aabbccddh"]  # 9 letters: no source of the splits has them
    monkeypatch.setattr(
        "attnkit.tasks.seq2seq.distill.unlabelled.builtin_words", lambda: sorted([*held, *new, "xyz", "abz"])
    )
    out = tmp_path / "run"
    argv = ["train", "seq2seq", *gold_data(toy), *MODEL, "--no-test", "--epochs", "1", "--out", str(out)]
    argv += ["--distill-from", str(toy["teacher"]), "--distill-unlabelled", "builtin", "--distill-gold"]
    assert main([*argv, "--distill-max-unlabelled", "2"]) == 0
    record = json.loads((out / "metrics.json").read_text())["details"]["distill"]
    assert record["unlabelled"] == {"from": "builtin", "candidates": 3, "added": 2}  # x, y, z: not in the vocabulary
    cached = {}
    for chunk in (tmp_path / "cache" / "teachers").rglob("chunk-*.json"):
        cached.update(zip(*(json.loads(chunk.read_text())[key] for key in ("sources", "outputs")), strict=True))
    assert set(cached) - set(splits["train"]) < set(new) and len(set(cached) - set(splits["train"])) == 2
    gold = {(word, word.upper()) for word in splits["train"]}
    assert record["training_pairs"] == len(gold | {(w, o) for w, o in cached.items() if o})


def test_a_file_of_unlabelled_sources_is_read_one_a_line_and_sampled_with_the_seed(tmp_path):
    from attnkit.tasks.seq2seq.distill.unlabelled import unlabelled_sources

    path = tmp_path / "words.txt"
    path.write_text("  alpha \n\nbeta\ngamma\ndelta\nheld\nwith space\n", encoding="utf-8")
    options = {"exclude": {"held"}, "known": lambda word: " " not in word, "seed": 3}
    words, record = unlabelled_sources(str(path), limit=None, **options)
    assert words == ["alpha", "beta", "delta", "gamma"] and record == {"from": str(path), "candidates": 4, "added": 4}
    two, _ = unlabelled_sources(str(path), limit=2, **options)
    assert len(two) == 2 and set(two) < set(words) and two == unlabelled_sources(str(path), limit=2, **options)[0]


def test_english_words_are_lowercase_alphabetic_seen_twice():
    texts = ["The cat sat; the CAT ran.", "Zzz zzz brrr brrr x x it's its its", "sat ran"]
    assert english_words(texts) == ["cat", "its", "ran", "sat", "the"]


@pytest.mark.slow
def test_builtin_words_exclude_the_cmudict_valid_and_test_words():
    from attnkit.data.seq2seq import load_data_set
    from attnkit.tasks.seq2seq.distill.unlabelled import unlabelled_sources

    cmudict = load_data_set("cmudict")
    splits = {s for s, _ in (*cmudict.train, *cmudict.valid, *cmudict.test)}
    words, record = unlabelled_sources("builtin", exclude=splits, known=str.isalpha, limit=None, seed=0)
    assert record["added"] == len(words) > 10_000 and not set(words) & splits


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnkit: error: ") and "\n" not in err, err
    return err


def test_teachers_with_another_vocabulary_are_refused_in_one_line(toy, tmp_path, capsys):
    teacher = tmp_path / "teacher"
    shutil.copytree(toy["teacher"] / "best", teacher)
    path = teacher / "target_tokenizer.json"
    tokenizer = json.loads(path.read_text())
    symbols = tokenizer["symbols"]
    symbols[0], symbols[1] = symbols[1], symbols[0]  # the same size, another order
    path.write_text(json.dumps(tokenizer))
    out = tmp_path / "run"
    argv = ["train", "seq2seq", *gold_data(toy), *MODEL, "--epochs", "1", "--out", str(out)]
    assert main([*argv, "--distill-from", str(teacher)]) == 2
    assert "the teachers' target vocabulary (12 tokens) is not the student's (12)" in _one_line_error(capsys)
    assert not out.exists()  # nothing half-written


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--distill-beam", "3"], "--distill-beam: needs --distill-from"),
        (["--distill-from", "g2p", "--distill-max-unlabelled", "5"], "--distill-max-unlabelled: needs --distill-unl"),
        (["--distill-from", "no/such/run"], "--distill-from no/such/run: "),
        (["--distill-from", "g2p", "--distill-unlabelled", "no-such.txt"], "--distill-unlabelled no-such.txt: neither"),
    ],
)
def test_option_mistakes_are_one_line(toy, tmp_path, capsys, extra, message):
    out = tmp_path / "run"
    assert main(["train", "seq2seq", *gold_data(toy), *MODEL, "--out", str(out), *extra]) == 2
    assert message in _one_line_error(capsys)
    assert not out.exists()


def test_non_seq2seq_teacher_names_the_kind(toy, tmp_path, capsys):
    assert main(["train", "seq2seq", *gold_data(toy), "--out", str(tmp_path / "r"), "--distill-from", "r8"]) == 2
    assert "not a seq2seq checkpoint" in _one_line_error(capsys)


def test_summary_says_what_was_added():
    record = {"teachers": ["g2p", "runs/b"], "beam_size": 5, "labelled_sources": 1000, "gold": True,
              "unlabelled": {"from": "builtin", "candidates": 500, "added": 200}, "training_pairs": 2100,
              "cache": "/c/teachers/k"}  # fmt: skip
    line = student_module.summary(record, decoded=200)
    assert line.startswith("distilled from an ensemble of 2 (g2p, runs/b), beam 5: 1,000 training sources + 200 ")
    assert "(builtin, of 500) -> 2,100 training pairs (with the gold)" in line
    assert "200 decoded now, 1,000 read from /c/teachers/k" in line


def test_token_level_distillation_trains_against_the_teachers_distributions(toy, tmp_path, monkeypatch, capsys):
    calls = []
    loss = distribution_matching_loss

    def counted(*args, **kwargs):
        calls.append(1)
        return loss(*args, **kwargs)

    monkeypatch.setattr("attnkit.tasks.seq2seq.objective.distribution_matching_loss", counted)
    out = tmp_path / "run"
    argv = ["train", "seq2seq", *gold_data(toy), *MODEL, "--no-test", "--epochs", "1", "--out", str(out)]
    assert main([*argv, "--distill-from", str(toy["teacher"]), "--distill-token-weight", "0.5"]) == 0
    assert len(calls) == 20  # every step: 320 pairs in batches of 16
    assert "their distributions weighted 0.5 in the loss" in capsys.readouterr().out
    assert json.loads((out / "best" / "config.json").read_text())["distillation"]["token_weight"] == 0.5


@pytest.mark.parametrize("value", ["0", "1.5", "x"])
def test_a_weight_outside_the_unit_interval_is_one_line(toy, tmp_path, capsys, value):
    argv = ["train", "seq2seq", *gold_data(toy), "--out", str(tmp_path / "r"), "--distill-from", "g2p"]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--distill-token-weight", value])
    assert exit_.value.code == 2 and "--distill-token-weight: must be a number in (0, 1]" in capsys.readouterr().err
