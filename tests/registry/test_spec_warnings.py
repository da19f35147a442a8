"""Soft problems with a runtime spec, reported as warnings, never errors."""

from __future__ import annotations

from typing import Any

from runtimes.registry.trainingruntime.validation import validate_spec
from runtimes.registry.trainingruntime.warnings import spec_warnings, update_warnings
from tests.invalid_manifests import base, merge_patch, stub_catalog

CATALOG = stub_catalog()
DIGEST = "ab" * 32


def _warnings(patch: dict[str, Any]) -> list[str]:
    spec = merge_patch(base()["spec"], patch)
    assert validate_spec(spec, CATALOG) == []  # warnings are about specs that are accepted
    return spec_warnings(spec, CATALOG)


def test_it_warns_about_a_distill_runtime_without_a_teacher() -> None:
    [warning] = _warnings({"task": "Distill"})
    assert warning.startswith("spec.requires.teacher: ")
    assert _warnings({"task": "Distill", "requires": {"teacher": True}}) == []


def test_it_warns_when_a_dataset_task_does_not_require_data() -> None:
    [warning] = _warnings({"task": "DPO", "requires": {"data": False}})
    assert warning.startswith("spec.requires.data: a DPO runtime")
    assert _warnings({"task": "GRPO", "requires": {"data": False}}) == []


def test_it_warns_about_an_evaluate_runtime_without_task_times() -> None:
    warnings = _warnings({"task": "Evaluate", "estimate": {"secondsPerTask": None}})
    assert any(w.startswith("spec.estimate.secondsPerTask: an Evaluate runtime") for w in warnings)


def test_it_warns_about_task_times_nothing_uses() -> None:
    [warning] = _warnings({"modes": ["Train"]})
    assert warning.startswith("spec.estimate.secondsPerTask: only evaluation uses task times")


def test_it_warns_about_presets_on_classes_without_an_estimate() -> None:
    warnings = _warnings({"estimate": {"secondsPerStep": {"h100-94g": None}}})
    assert warnings == [
        "spec.defaults.resources.gpu.type: no spec.estimate.secondsPerStep for accelerator "
        "class(es) h100-94g; jobs placed there show no expected duration",
        "spec.presets[0].resources.gpu.type: no spec.estimate.secondsPerStep for accelerator "
        "class(es) h100-94g; jobs placed there show no expected duration",
    ]


def test_it_does_not_expect_estimates_for_classes_an_exact_request_cannot_reach() -> None:
    patch = {
        "defaults": {"resources": {"gpu": {"type": ["h100-80g-sxm"], "exact": True}}},
        "estimate": {"secondsPerStep": {"h100-94g": None}},
        "presets": [
            {
                "model": "Qwen/Qwen3-0.6B",
                "method": "Full",
                "resources": {
                    "gpu": {"type": ["h100-80g-pcie", "A100"], "count": 1, "exact": False}
                },
            }
        ],
    }
    warnings = _warnings(patch)
    assert any("presets[0]" in w and "h100-94g" in w for w in warnings)
    assert not any("spec.defaults.resources.gpu.type" in w for w in warnings)


def test_it_warns_about_an_estimate_no_gpu_request_can_use() -> None:
    [warning] = _warnings({"estimate": {"secondsPerStep": {"mi300x-192g": 0.3}}})
    assert warning == (
        "spec.estimate.secondsPerStep[mi300x-192g]: no preset or default GPU request can run on "
        "this accelerator class, so the time is never used"
    )


def test_it_does_not_judge_estimates_when_nothing_asks_for_a_gpu() -> None:
    spec = merge_patch(base()["spec"], {"presets": None, "defaults": {"resources": {"gpu": None}}})
    assert spec_warnings(spec, CATALOG) == []


def test_it_tolerates_specs_that_are_not_valid() -> None:
    assert spec_warnings("x", CATALOG) == []
    assert (
        spec_warnings({"task": 3, "estimate": [], "presets": [None, {"resources": 1}]}, CATALOG)
        == []
    )


def test_it_never_raises_on_modes_of_the_wrong_type() -> None:
    # Found by the property test: a spec whose modes is a number (never admitted, but warnings
    # are asked of any spec a caller has) raised TypeError.
    spec = merge_patch(base()["spec"], {"modes": 3})
    assert any(w.startswith("spec.estimate.secondsPerTask") for w in spec_warnings(spec, CATALOG))


def test_an_update_is_warned_only_about_the_fields_it_changed() -> None:
    spec = merge_patch(base()["spec"], {"estimate": {"secondsPerStep": {"h100-94g": None}}})
    assert len(spec_warnings(spec, CATALOG)) == 2
    # Unchanged spec (a label), or a change no warning is computed from (the image): silence.
    assert update_warnings(spec, spec, CATALOG) == []
    other = "registry.nodus.dev/trainers/other@sha256:" + "cd" * 32
    assert update_warnings({**spec, "image": other}, spec, CATALOG) == []
    # The estimate or the presets changed: the warnings they cause are said again.
    retimed = merge_patch(spec, {"estimate": {"secondsPerStep": {"a100-80g": 2.0}}})
    assert update_warnings(retimed, spec, CATALOG) == spec_warnings(retimed, CATALOG)
    assert len(update_warnings(retimed, spec, CATALOG)) == 2
    moved = merge_patch(spec, {"presets": spec["presets"][:1]})
    assert update_warnings(moved, {**spec, "presets": []}, CATALOG) == spec_warnings(moved, CATALOG)
    # A create (no old spec) hears them all.
    assert update_warnings(spec, None, CATALOG) == spec_warnings(spec, CATALOG)


def test_it_warns_that_the_controller_will_not_contact_a_registry_off_the_allow_list(
    settings: Any,
) -> None:
    settings.NODUS_REGISTRY_ALLOW = "ghcr.io, docker.io"
    [warning] = _warnings({"image": "registry.example.com/trainers/sft:1.0@sha256:" + DIGEST})
    assert warning.startswith("spec.image: registry registry.example.com is not on the allow-list")
    # The local layout's registry, an allowed host, and Docker Hub by any of its names pass.
    assert _warnings({"image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + DIGEST}) == []
    assert _warnings({"image": "GHCR.io/org/trainer:1@sha256:" + DIGEST}) == []
    assert _warnings({"image": "busybox:1.36@sha256:" + DIGEST}) == []
    assert _warnings({"image": "index.docker.io/library/busybox:1.36@sha256:" + DIGEST}) == []
    settings.NODUS_REGISTRY_ALLOW = "*"
    assert _warnings({"image": "registry.example.com/trainers/sft:1.0@sha256:" + DIGEST}) == []


def test_an_image_warning_is_said_again_only_when_the_image_changes(settings: Any) -> None:
    settings.NODUS_REGISTRY_ALLOW = ""
    spec = merge_patch(
        base()["spec"], {"image": "registry.example.com/trainers/sft:1.0@sha256:" + DIGEST}
    )
    assert update_warnings(spec, spec, CATALOG) == []
    moved = {**spec, "image": "quay.io/trainers/sft:1.0@sha256:" + DIGEST}
    [warning] = update_warnings(moved, spec, CATALOG)
    assert "registry quay.io is not on the allow-list" in warning
