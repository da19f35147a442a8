"""YAML wherever kube-apiserver speaks it: Tables, metadata-only answers and Status errors in
YAML when Accept asks for it first (a watch in YAML is 406, as kube streams none: its live
sequence is in test_watch_live.py)."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    GV,
    TRS,
    Sequence,
    Step,
    create,
    failure,
    get,
    params,
    run,
)
from tests.conformance.patterns import ANY

NEGOTIATE = "apiserver pkg/endpoints/handlers/negotiation/negotiate.go"
YAML_TABLE = "application/yaml;as=Table;v=v1;g=meta.k8s.io"
YAML_PARTIAL = "application/yaml;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
YAML_PARTIAL_LIST = "application/yaml;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
IN_YAML = {"content-type": "application/yaml"}

SEQUENCES = [
    Sequence(
        "a-list-as-a-table-in-yaml",
        f"{NEGOTIATE} NegotiateOutputMediaType (as=Table with application/yaml)",
        (
            create("a"),
            Step(
                "GET",
                TRS,
                200,
                headers={"Accept": YAML_TABLE},
                expect={
                    "kind": "Table",
                    "apiVersion": "meta.k8s.io/v1",
                    "columnDefinitions": ANY,
                    "rows": [{"cells": ANY, "object": {"metadata": {"name": "a"}}}],
                },
                expect_headers=IN_YAML,
            ),
        ),
    ),
    Sequence(
        "an-object-as-a-table-in-yaml",
        f"{NEGOTIATE} NegotiateOutputMediaType (as=Table with application/yaml)",
        (
            create("a"),
            get(
                "a",
                headers={"Accept": YAML_TABLE},
                expect={
                    "kind": "Table",
                    "rows": [{"cells": ANY, "object": {"metadata": {"name": "a"}}}],
                },
                expect_headers=IN_YAML,
            ),
        ),
    ),
    Sequence(
        "metadata-only-in-yaml",
        f"{NEGOTIATE} (as=PartialObjectMetadata[List] with application/yaml)",
        (
            create("a"),
            get(
                "a",
                headers={"Accept": YAML_PARTIAL},
                expect={
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"name": "a", "namespace": "demo"},
                },
                expect_headers=IN_YAML,
            ),
            Step(
                "GET",
                TRS,
                200,
                headers={"Accept": YAML_PARTIAL_LIST},
                expect={
                    "kind": "PartialObjectMetadataList",
                    "items": [{"metadata": {"name": "a"}}],
                },
                expect_headers=IN_YAML,
            ),
        ),
    ),
    Sequence(
        "an-error-is-a-status-in-yaml-when-yaml-is-asked-for",
        f"{NEGOTIATE} (errors are written with the negotiated serializer)",
        (
            get(
                "ghost",
                404,
                failure(404, "NotFound", 'trainingruntimes.nodus.dev "ghost" not found'),
                headers={"Accept": "application/yaml"},
                expect_headers=IN_YAML,
            ),
            Step(
                "GET",
                f"{GV}/namespaces/demo/trainingruntimes/ghost",
                404,
                headers={"Accept": f"{YAML_TABLE}, application/json"},
                expect=failure(404, "NotFound"),
                expect_headers=IN_YAML,
            ),
        ),
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
