"""A managed runtime (project nodus) must be one the controller can verify: an image from a
registry it will not contact is refused at admission, where a project's runtime is only warned,
and so is an image the local image layout holds without a signature.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.signing.cosign import generate_key_pair, sign
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

ELSEWHERE = "registry.example.com/trainers/sft:1.0@sha256:" + "ab" * 32
LAYOUT = "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32


def runtimes(project: str) -> str:
    return f"{GV}/namespaces/{project}/trainingruntimes"


def test_a_managed_runtime_from_a_registry_off_the_allow_list_is_refused(
    api: Callable[[str | None], ApiClient], settings: Any
) -> None:
    settings.NODUS_REGISTRY_ALLOW = "ghcr.io"
    root = api("root")
    refused = root.post(f"{runtimes('nodus')}?dryRun=All", runtime_manifest("far", image=ELSEWHERE))
    assert refused.status_code == 422, refused.json_body
    [cause] = refused.json_body["details"]["causes"]
    assert cause["field"] == "spec.image"
    assert cause["reason"] == "FieldValueForbidden"
    assert "registry registry.example.com is not on the allow-list" in cause["message"]
    assert "ask an administrator to allow registry.example.com" in refused.json_body["fix"]
    # In a project it is written, with the warning that says what the controller will do.
    taken = root.post(runtimes("demo"), runtime_manifest("far", image=ELSEWHERE))
    assert taken.status_code == 201
    assert "registry registry.example.com is not on the allow-list" in taken["Warning"]
    # The layout's registry and allowed ones are fine for managed runtimes.
    assert root.post(runtimes("nodus"), runtime_manifest("near", image=LAYOUT)).status_code == 201


def test_a_managed_runtime_published_before_the_allow_list_moved_still_takes_other_writes(
    api: Callable[[str | None], ApiClient], settings: Any
) -> None:
    root = api("root")
    settings.NODUS_REGISTRY_ALLOW = "registry.example.com"
    assert root.post(runtimes("nodus"), runtime_manifest("old", image=ELSEWHERE)).status_code == 201
    settings.NODUS_REGISTRY_ALLOW = ""
    labelled = root.patch(f"{runtimes('nodus')}/old", {"metadata": {"labels": {"tier": "gold"}}})
    assert labelled.status_code == 200, labelled.json_body
    moved = root.patch(
        f"{runtimes('nodus')}/old", {"spec": {"image": ELSEWHERE.replace("1.0", "2.0")}}
    )
    assert moved.status_code == 422


def test_a_managed_runtime_whose_image_the_layout_holds_unsigned_is_refused(
    api: Callable[[str | None], ApiClient], settings: Any, tmp_path: Path
) -> None:
    layout = LayoutStore(tmp_path / "layout")
    settings.NODUS_IMAGE_LAYOUT = str(layout.root)
    digest = build_image(layout, "registry.nodus.dev/trainers/fresh:1", user="trainer")
    unsigned = f"registry.nodus.dev/trainers/fresh:1@{digest}"
    root = api("root")

    refused = root.post(
        f"{runtimes('nodus')}?dryRun=All", runtime_manifest("fresh", image=unsigned)
    )
    assert refused.status_code == 422, refused.json_body
    [cause] = refused.json_body["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec.image", "FieldValueForbidden")
    assert "without a cosign signature" in cause["message"]
    assert "SignatureMissing" in cause["message"]
    assert "cosign sign" in refused.json_body["fix"]
    # A project's runtime needs no signature: the same image is taken there.
    assert root.post(runtimes("demo"), runtime_manifest("fresh", image=unsigned)).status_code == 201

    sign(layout, unsigned, generate_key_pair().private_pem)
    signed = root.post(runtimes("nodus"), runtime_manifest("fresh", image=unsigned))
    assert signed.status_code == 201, signed.json_body
