"""A run started before an option existed resumes with that option's as-before value, and only with it."""

from attnkit.tasks.run_manifest import RunManifest, differences
from attnkit.tasks.run_plan import ADDED_LATER, MAY_CHANGE


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
