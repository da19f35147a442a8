"""Docs pages: one per registered error reason, and the API reference from the schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.utils.html import escape

from runtimes.apimachinery.errors import REASONS
from runtimes.console.docs import api_fields
from runtimes.registry.kinds import TRAINING_JOBS, TRAINING_RUNTIMES

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("reason", sorted(REASONS))
def test_it_serves_a_page_for_every_registered_reason(reason: str) -> None:
    response = Client().get(f"/docs/errors/{reason}")
    assert response.status_code == 200
    body = response.content.decode()
    entry = REASONS[reason]
    assert f"HTTP {entry.code}" in body
    for text in (entry.meaning, entry.fix, *entry.causes):
        assert escape(text) in body  # autoescaped, as every registry text must be


def test_it_answers_404_with_an_html_page_for_an_unknown_reason() -> None:
    response = Client().get("/docs/errors/NoSuchReason")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"Not found" in response.content


def test_it_lists_every_reason_on_the_index() -> None:
    body = Client().get("/docs/errors").content.decode()
    for reason in REASONS:
        assert f'href="/docs/errors/{reason}"' in body


def test_it_documents_every_schema_field_in_the_api_reference() -> None:
    body = Client().get("/docs/api").content.decode()
    paths = [f.path for f in api_fields()]
    assert "spec.defaults.resources.gpu.count" in paths
    assert "spec.presets[].model" in paths
    assert "status.conditions[].reason" in paths
    for path in paths:
        assert f">{path}" in body


def test_it_documents_the_training_job_beside_the_runtime() -> None:
    body = Client().get("/docs/api").content.decode()
    paths = [f.path for f in api_fields(TRAINING_JOBS)]
    assert "spec.distributed.nodes" in paths
    assert "status.compiled.offerings" in paths
    for field in api_fields(TRAINING_JOBS):
        assert f'<tr id="{field.anchor}">' in body
    assert body.count('id="f-spec-launcher"') == 1  # the runtime's anchors are unchanged
    assert "kubectl explain tj.spec" in body


def test_it_shows_enums_defaults_and_types() -> None:
    fields = {f.path: f for f in api_fields()}
    launcher = fields["spec.launcher"]
    assert launcher.default == "Plain"
    assert "Torchrun" in launcher.enum
    assert fields["spec.modes"].type == "[]string"
    assert fields["spec.estimate.secondsPerStep"].type == "map[string]number"
    assert fields["spec.image"].required
    body = Client().get("/docs/api").content.decode()
    assert "<code>Deepspeed</code>" in body
    assert "<code>&quot;/nodus/state&quot;</code>" in body
    assert "<code>[&quot;Train&quot;]</code>" in body


def test_it_links_status_docs_to_a_page_that_exists(api: Any) -> None:
    response = api("alice").get("/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes/nope")
    assert response.status_code == 404
    docs = response.json_body["docs"]
    assert docs.endswith("/docs/errors/NotFound")
    assert Client().get("/docs/errors/NotFound").status_code == 200


def test_it_indents_every_field_depth_with_a_stylesheet_rule() -> None:
    # The CSP allows no style attributes: each nesting depth is a rule in console.css.
    css = (Path(settings.BASE_DIR) / "static" / "console" / "console.css").read_text()
    depths = {f.depth for rt in (TRAINING_RUNTIMES, TRAINING_JOBS) for f in api_fields(rt)}
    for depth in depths - {1}:
        assert f'.fields .path[data-depth="{depth}"] {{ --depth: {depth}; }}' in css
