"""A preset's resources: each of its fields replaces the defaults' whole."""

from __future__ import annotations

from runtimes.catalog.presets import preset_resources

SPEC = {
    "defaults": {
        "resources": {
            "cpu": "8",
            "gpu": {"type": ["H100"], "count": 1, "minMemory": "80Gi"},
        }
    },
}


def test_it_replaces_each_default_field_the_preset_sets_whole() -> None:
    preset = {"resources": {"gpu": {"type": ["A100"], "count": 2}}}
    assert preset_resources(SPEC, preset) == {
        "cpu": "8",
        "gpu": {"type": ["A100"], "count": 2},  # no minMemory leaks in from the defaults
    }


def test_it_gives_the_defaults_without_a_preset_or_its_resources() -> None:
    assert preset_resources(SPEC, None) == SPEC["defaults"]["resources"]
    assert preset_resources(SPEC, {"model": "m"}) == SPEC["defaults"]["resources"]
    assert preset_resources({}, None) == {}


def test_it_returns_a_copy_the_caller_may_change() -> None:
    resources = preset_resources(SPEC, None)
    resources["gpu"]["count"] = 8
    assert SPEC["defaults"]["resources"]["gpu"]["count"] == 1
