"""Property-based fuzzing of every operation in our own /openapi/v3 document, with schemathesis.

Requests generated from the published schema go to a live daphne server as alice in project
demo; no answer may be a 5xx, and every answer must conform to the document (status code
declared, content type, response schema). Bounded: a few examples per operation, well under a
minute in all.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode, checks

from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.kubectl  # runs with the other live-server tests

EXAMPLES_PER_OPERATION = 5
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


def without_go_durations(node: Any) -> Any:
    """Drops `format: duration`: kube-openapi means a Go duration ("10m"), JSON Schema's format
    checker an ISO 8601 one ("PT10M"). The pattern beside it still carries the rule."""
    if isinstance(node, dict):
        return {
            k: without_go_durations(v)
            for k, v in node.items()
            if not (k == "format" and v == "duration")
        }
    if isinstance(node, list):
        return [without_go_durations(v) for v in node]
    return node


@pytest.fixture(scope="module")
def schema(daphne_server: LiveServer) -> Any:
    with daphne_server.client("alice") as client:
        index = client.get("/openapi/v3").json()
        url = index["paths"]["apis/nodus.dev/v1beta1"]["serverRelativeURL"]
        document = client.get(url).json()
    return schemathesis.openapi.from_dict(without_go_durations(document))


def operation_labels() -> list[str]:
    """The labels are read from the generator itself, so collection needs no server."""
    from runtimes.registry.openapi import openapi_v3_document

    loaded = schemathesis.openapi.from_dict(without_go_durations(openapi_v3_document()))
    return [result.ok().label for result in loaded.get_all_operations()]  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize("label", operation_labels())
def test_it_never_fails_and_always_conforms(
    schema: Any,
    daphne_server: LiveServer,
    label: str,
    mode: GenerationMode,
) -> None:
    """Positive examples follow the schema; negative ones break it (wrong types, missing
    required fields, bad parameters) and must be refused with a documented 4xx."""
    operation = schema.find_operation_by_label(label)
    headers = {"Authorization": f"Bearer {daphne_server.tokens['alice']}"}
    problems: list[str] = []
    calls: list[int] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def exercise(case: Any) -> None:
        if case.path_parameters and "namespace" in case.path_parameters:
            case.path_parameters["namespace"] = "demo"
        if case.query:
            # A watch streams until its timeout; watch has its own tests.
            case.query.pop("watch", None)
        response = case.call(base_url=daphne_server.url, headers=headers, timeout=20)
        calls.append(response.status_code)
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except Exception as exc:
            problems.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {exc}")

    exercise()
    assert calls, "no example reached the server"
    assert problems == [], "\n\n".join(problems[:5])


def test_it_is_still_up_after_the_fuzzing(daphne_server: LiveServer) -> None:
    assert httpx.get(f"{daphne_server.url}/version", timeout=5).status_code == 200
