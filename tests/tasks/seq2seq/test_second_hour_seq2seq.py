"""Seq2seq in a new user's second hour (issue #26): ``translate`` reads a ``str`` as one text; ``attnkit.load``
reads a CTranslate2 export (translate, evaluate); the command line points an export to ``--backend ctranslate2``
and says what an export cannot do (subprocess: exit 2, one ``attnkit: error:`` line, nothing written)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import attnkit


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Run ``attnkit ARGS`` as a user would (a new process), with few threads."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "attnkit.cli", *args], capture_output=True, text=True, env=env)


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit 2, one ``attnkit: error:`` line holding every fragment, no traceback."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnkit: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_translate_reads_a_str_as_one_text(dates_transformer):
    loaded = attnkit.load(dates_transformer / "run", device="cpu")
    one = loaded.translate("4 March 1997")
    assert len(one) == 1 and one[0].source == "4 March 1997"
    with pytest.raises(ValueError, match="text at index 0 is empty"):
        loaded.translate([""])
    with pytest.raises(TypeError, match="text at index 0 is NoneType, not str"):
        loaded.translate([None])


# ------------------------------------------------------------------------------------------------ 7. exports
@pytest.fixture(scope="module")
def export(dates_transformer, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "ct2"
    result = run_cli(
        "export", "--checkpoint", str(dates_transformer / "run"), "--quantize", "float32", "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert "(float32 weights)" in result.stdout
    return out


def test_attnkit_load_reads_an_export_for_translate_and_evaluate(dates_transformer, export):
    from attnkit.tasks.seq2seq.ctranslate2.probe import is_export

    assert is_export(export) and not is_export(dates_transformer / "run" / "best")  # the probe knows what export writes
    native, exported = attnkit.load(dates_transformer / "run", device="cpu"), attnkit.load(export, device="cpu")
    sources = ["4 March 1997", "12/25/2001"]
    assert [t.text for t in exported.translate(sources)] == [t.text for t in native.translate(sources)]
    assert len(exported.translate("4 March 1997")) == 1
    scores = exported.evaluate(sources, [t.text for t in native.translate(sources)])  # as Classifier.evaluate
    assert scores["exact_match"] == 100.0 and scores["count"] == 2
    with pytest.raises(ValueError, match="gives no attention weights"):
        exported.translate(sources, need_weights=True)


@pytest.mark.parametrize("command", ["translate", "explain"])
def test_the_cli_points_an_export_to_the_ctranslate2_backend(export, dates_transformer, command, tmp_path):
    argv = [command, "--checkpoint", str(export), "--text", "4 March 1997"]
    if command == "explain":
        argv += ["--out", str(tmp_path / "report.html")]
    result = run_cli(*argv)
    assert_user_error(result, str(export), "a CTranslate2 export", "--backend ctranslate2", "no attention weights",
                      str(dates_transformer / "run" / "best"))  # fmt: skip
    assert not (tmp_path / "report.html").exists()
