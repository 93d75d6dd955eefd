"""A run started before an option existed resumes with that option's as-before value, and only with it."""

from attnkit.tasks.run.manifest import RunManifest, differences
from attnkit.tasks.run.plan import ADDED_LATER, MAY_CHANGE


def _manifest(**settings) -> RunManifest:
    return RunManifest(
        format="attnkit.run", format_version=1, command="train classify", settings=settings, inputs={}, written=[]
    )


def test_an_option_added_later_at_its_as_before_value_is_no_difference():
    old = _manifest(seed=0, lr=0.002)  # recorded before --valid-seed and --scan-mb existed
    now = {"seed": 0, "lr": 0.002, "valid_seed": None, "scan_mb": 64}
    assert differences(old, "train classify", now, {}, may_change=MAY_CHANGE, added_later=ADDED_LATER) == []


def test_an_option_added_later_at_another_value_is_named():
    old = _manifest(seed=0)
    now = {"seed": 0, "valid_seed": 3, "scan_mb": 0}
    found = differences(old, "train classify", now, {}, may_change=MAY_CHANGE, added_later=ADDED_LATER)
    assert found == ["scan_mb: 64 then, 0 now", "valid_seed: none then, 3 now"]


def test_without_added_later_a_new_setting_is_still_a_difference():
    old = _manifest(seed=0)
    found = differences(old, "train classify", {"seed": 0, "valid_seed": None}, {}, may_change=MAY_CHANGE)
    assert found == ["valid_seed: (not set) then, none now"]


def _plan(out, **settings):
    import argparse

    from attnkit.tasks.run.plan import plan_run

    args = argparse.Namespace(out=str(out), resume=False, overwrite=False, seed=0, lr=0.002, **settings)
    return args, lambda: plan_run(args, command="train classify", inputs={}, writes=["best", "last"])


def _started(out, **settings) -> None:
    _, plan = _plan(out, **settings)
    with plan().writing():
        (out / "last").mkdir()


def test_a_run_started_by_the_cli_resumes_in_process_and_back(tmp_path):
    """`attnkit train classify` records argparse's sub-command fields (command, task); `attnkit experiment` trains
    in process without them: either resumes the other's run (found when the classification experiment refused the
    fine-foods seeds trained by the CLI)."""
    from attnkit.tasks.run.plan import DISPATCH

    cli, in_process = tmp_path / "cli", tmp_path / "in_process"
    _started(cli, command="train", task="classify")
    _started(in_process)
    assert not set(DISPATCH) & set(json_settings(cli))
    _record_as_before_the_fix(cli, command="train", task="classify")  # as the runs of earlier sessions hold them
    for out, fields in ((cli, {}), (in_process, {"command": "train", "task": "classify"})):
        args, plan = _plan(out, **fields)
        args.resume = True
        assert plan().mode == "resume"


def test_a_real_difference_is_still_named_beside_the_sub_command_fields(tmp_path):
    import pytest

    out = tmp_path / "run"
    _started(out, command="train", task="classify")
    args, plan = _plan(out)
    args.resume, args.lr = True, 0.01
    with pytest.raises(ValueError, match=r"lr: 0.002 then, 0.01 now\): resume"):
        plan()


def json_settings(out) -> dict:
    from attnkit.tasks.run.manifest import read_manifest

    return read_manifest(out).settings


def _record_as_before_the_fix(out, **fields) -> None:
    import dataclasses

    from attnkit.tasks.run.manifest import read_manifest, write_manifest

    saved = read_manifest(out)
    write_manifest(out, dataclasses.replace(saved, settings={**saved.settings, **fields}))
