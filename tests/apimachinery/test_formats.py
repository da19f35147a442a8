"""String formats: image references, Hugging Face ids, paths, env names and friends."""

from __future__ import annotations

import re

import pytest

from runtimes.apimachinery.formats import FORMAT_PATTERNS, check_format, known_formats

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "image",
    [
        f"registry.nodus.dev/trainers/sft@{DIGEST}",
        f"registry.nodus.dev/trainers/sft:v1.2@{DIGEST}",
        f"localhost:5000/sft@{DIGEST}",
        f"localhost:5000/team/sft:latest@{DIGEST}",
        f"sft@{DIGEST}",
        f"ghcr.io/org/my_trainer__x-y.z@{DIGEST}",
        f"[::1]:5000/sft@{DIGEST}",
    ],
)
def test_it_accepts_digest_pinned_images(image: str) -> None:
    assert check_format("image-ref", image) is None
    assert re.fullmatch(FORMAT_PATTERNS["image-ref"], image)


@pytest.mark.parametrize(
    ("image", "hint"),
    [
        ("registry.nodus.dev/trainers/sft:1.0", "pinned by digest"),
        ("registry.nodus.dev/trainers/sft", "pinned by digest"),
        (f"registry.nodus.dev/Trainers/sft@{DIGEST}", "lowercase repository"),
        (f"registry.nodus.dev/trainers/sft@{DIGEST.upper()}", "digest-pinned"),
        (f"registry.nodus.dev/trainers/sft@{DIGEST[:-1]}", "digest-pinned"),
        (f"registry.nodus.dev/trainers/sft@sha512:{DIGEST[7:]}", "digest-pinned"),
        (f"registry.nodus.dev//sft@{DIGEST}", "digest-pinned"),
        (f"registry.nodus.dev/sft:-bad@{DIGEST}", "digest-pinned"),
        (f"{'a' * 256}@{DIGEST}", "at most 255"),
    ],
)
def test_it_rejects_images_that_are_not_digest_pinned(image: str, hint: str) -> None:
    problem = check_format("image-ref", image)
    assert problem is not None
    assert hint in problem


def test_it_measures_repository_length_without_tag_or_port() -> None:
    assert check_format("image-ref", f"localhost:5000/{'a' * 240}:{'t' * 100}@{DIGEST}") is None


@pytest.mark.parametrize(
    "model", ["Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B", "a/b", "org_x/m.v2"]
)
def test_it_accepts_hugging_face_repository_ids(model: str) -> None:
    assert check_format("hf-repo", model) is None


@pytest.mark.parametrize(
    "model",
    [
        "Qwen3-0.6B",
        "Qwen/",
        "/Qwen3",
        "a/b/c",
        "Qwen/Qwen3--0.6B",
        "Qwen/..",
        "-a/b",
        "a/b-",
        "a b/c",
    ],
)
def test_it_rejects_other_model_names(model: str) -> None:
    assert check_format("hf-repo", model) is not None


def test_it_limits_hugging_face_names_to_96_characters() -> None:
    assert check_format("hf-repo", "o/" + "n" * 96) is None
    assert "96" in (check_format("hf-repo", "o/" + "n" * 97) or "")


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("/nodus/state", True),
        ("/", True),
        ("state", False),
        ("/a/../b", False),
        ("/a/..", False),
        ("/a/..b", True),
    ],
)
def test_it_wants_absolute_paths_without_parent_segments(path: str, ok: bool) -> None:
    assert (check_format("absolute-path", path) is None) is ok


@pytest.mark.parametrize(
    ("name", "ok"),
    [("HF_TOKEN", True), ("_x1", True), ("1X", False), ("A-B", False), ("A.B", False)],
)
def test_it_checks_env_names(name: str, ok: bool) -> None:
    assert (check_format("env-name", name) is None) is ok


@pytest.mark.parametrize(
    ("key", "ok"),
    [("token", True), (".dockerconfigjson", True), ("..x", False), ("a/b", False), (".", False)],
)
def test_it_checks_secret_keys_like_configmap_keys(key: str, ok: bool) -> None:
    assert (check_format("secret-key", key) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("2026-12-02T10:51:39Z", True),
        ("2026-12-02T10:51:39.5+01:00", True),
        ("2026-12-02", False),
        ("2026-13-02T10:51:39Z", False),
    ],
)
def test_it_checks_rfc3339_times(value: str, ok: bool) -> None:
    assert (check_format("date-time", value) is None) is ok


@pytest.mark.parametrize(
    ("reason", "ok"),
    [("SignatureVerified", True), ("A_b:c,d", True), ("1Bad", False), ("Bad,", False)],
)
def test_it_checks_condition_reasons(reason: str, ok: bool) -> None:
    assert (check_format("condition-reason", reason) is None) is ok


def test_it_wants_positive_quantities_and_durations() -> None:
    assert check_format("quantity", "0") == "must be greater than zero"
    assert check_format("quantity", "1m") is None
    assert check_format("duration", "0s") == "must be greater than zero"
    assert check_format("duration", "1ns") is None


def test_it_publishes_a_pattern_that_agrees_with_each_check() -> None:
    samples = {
        "quantity": ["8", "64Gi", "1e3", "64GB", "1e1.5"],
        "duration": ["90s", "1h30m", "5", "1d"],
        "env-name": ["A", "1A"],
        "token": ["nf4", "nf 4"],
        "digest": [DIGEST, "sha256:abc"],
        "dns-label": ["rollout", "Rollout"],
        "hf-repo": ["Qwen/Qwen3-0.6B", "Qwen3"],
    }
    for name, values in samples.items():
        assert name in known_formats()
        for value in values:
            published = re.search(FORMAT_PATTERNS[name], value) is not None
            assert published == (check_format(name, value) is None), (name, value)
