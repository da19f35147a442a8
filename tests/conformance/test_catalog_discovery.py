"""The cluster-scoped Accelerator catalog, and discovery as kube-apiserver publishes it."""

from __future__ import annotations

import pytest

from runtimes.registry import seeding
from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    ACCS,
    GV,
    MERGE,
    TABLE,
    Sequence,
    Step,
    failure,
    params,
    run,
)
from tests.conformance.patterns import (
    ABSENT,
    ANY,
    RV,
    Exactly,
    Item,
    Length,
    Re,
    contains,
)

BASIC = "apiextensions-apiserver test/integration/basic_test.go TestClusterScopedCRUD"
DISCOVERY = "apiextensions-apiserver test/integration/basic_test.go TestDiscovery"
SUBRES_DISCOVERY = (
    "apiextensions-apiserver test/integration/subresources_test.go TestSubresourcesDiscovery"
)
AGGREGATED = "kubernetes test/integration/apiserver/discovery/discovery_test.go"
VERSION = (
    "kubernetes test/integration/apiserver/compatibility_versions_test.go; "
    "apimachinery version.Info"
)
AGGREGATED_ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
H100 = ["h100-80g-pcie", "h100-80g-sxm", "h100-94g-nvl"]
NOT_ALLOWED = "read-only catalog (docs/kube-compatibility.md): writes are 405"

SEQUENCES = [
    Sequence(
        "a-cluster-scoped-list-has-no-namespaces",
        BASIC,
        (
            Step(
                "GET",
                ACCS,
                200,
                expect={
                    "kind": "AcceleratorList",
                    "apiVersion": "nodus.dev/v1beta1",
                    "metadata": {"resourceVersion": RV},
                    "items": Item(0, {"kind": "Accelerator", "metadata": {"namespace": ABSENT}}),
                },
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-cluster-scoped-get",
        BASIC,
        (
            Step(
                "GET",
                f"{ACCS}/h100-80g-sxm",
                200,
                expect={
                    "kind": "Accelerator",
                    "metadata": {"name": "h100-80g-sxm", "namespace": ABSENT, "uid": ANY},
                    "spec": {"family": "H100"},
                },
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-missing-cluster-scoped-object-is-404",
        BASIC + " (not found)",
        (
            Step(
                "GET",
                f"{ACCS}/nope",
                404,
                expect=failure(
                    404,
                    "NotFound",
                    'accelerators.nodus.dev "nope" not found',
                    {"name": "nope", "group": "nodus.dev", "kind": "accelerators"},
                ),
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-label-selector-on-a-cluster-scoped-list",
        BASIC + "; apimachinery labels",
        (
            Step(
                "GET",
                f"{ACCS}?labelSelector=nodus.dev%2Ffamily%3Dh100",
                200,
                expect={"items": [{"metadata": {"name": n}} for n in H100]},
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-name-field-selector-on-a-cluster-scoped-list",
        "apiextensions-apiserver test/integration/basic_test.go testFieldSelector",
        (
            Step(
                "GET",
                f"{ACCS}?fieldSelector=metadata.name%3Dl4-24g-pcie",
                200,
                expect={"items": [{"metadata": {"name": "l4-24g-pcie"}}]},
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-cluster-scoped-list-pages-in-name-order",
        "kubernetes test/e2e/apimachinery/chunking.go (cluster-scoped keys sort by name)",
        (
            Step(
                "GET",
                f"{ACCS}?limit=2",
                200,
                expect={
                    "items": [
                        {"metadata": {"name": "a100-40g-sxm"}},
                        {"metadata": {"name": "a100-80g-pcie"}},
                    ],
                    "metadata": {"continue": Re(".+"), "remainingItemCount": 10},
                },
                save={"token": "metadata.continue"},
            ),
            Step(
                "GET",
                f"{ACCS}?limit=2&continue={{token}}",
                200,
                expect={
                    "items": [
                        {"metadata": {"name": "a100-80g-sxm"}},
                        {"metadata": {"name": "b200-180g-sxm"}},
                    ]
                },
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-cluster-scoped-table",
        "apiextensions-apiserver test/integration/table_test.go TestTableGet",
        (
            Step(
                "GET",
                f"{ACCS}/h100-80g-sxm",
                200,
                headers={"Accept": TABLE},
                expect={
                    "kind": "Table",
                    "columnDefinitions": Item(0, {"name": "Name", "format": "name"}),
                    "rows": [
                        {
                            "cells": Item(0, "h100-80g-sxm"),
                            "object": {
                                "kind": "PartialObjectMetadata",
                                "metadata": {"namespace": ABSENT},
                            },
                        }
                    ],
                },
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-write-to-the-read-only-catalog-is-405",
        NOT_ALLOWED,
        (
            Step(
                "PATCH",
                f"{ACCS}/h100-80g-sxm",
                405,
                {"metadata": {"labels": {"a": "b"}}},
                MERGE,
                who="root",
                expect=failure(405, "MethodNotAllowed"),
            ),
            Step(
                "DELETE",
                f"{ACCS}/h100-80g-sxm",
                405,
                who="root",
                expect=failure(405, "MethodNotAllowed"),
            ),
            Step(
                "GET", f"{ACCS}/h100-80g-sxm", 200, expect={"metadata": {"labels": {"a": ABSENT}}}
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "every-signed-in-user-reads-the-catalog",
        "kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy (a read-only cluster role)",
        (Step("GET", ACCS, 200, who="charlie", expect={"items": Length(12)}),),
        accelerators=True,
    ),
    Sequence(
        "the-group-is-an-api-group",
        f"{DISCOVERY}; apimachinery metav1.APIGroup",
        (
            Step(
                "GET",
                "/apis/nodus.dev",
                200,
                expect={
                    "kind": "APIGroup",
                    "apiVersion": "v1",
                    "name": "nodus.dev",
                    "versions": [{"groupVersion": "nodus.dev/v1beta1", "version": "v1beta1"}],
                    "preferredVersion": {"groupVersion": "nodus.dev/v1beta1", "version": "v1beta1"},
                },
            ),
        ),
    ),
    Sequence(
        "the-group-version-lists-resources-with-verbs-and-names",
        f"{DISCOVERY}; {SUBRES_DISCOVERY}",
        (
            Step(
                "GET",
                GV,
                200,
                expect={
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": "nodus.dev/v1beta1",
                    "resources": contains(
                        {
                            "name": "trainingruntimes",
                            "singularName": "trainingruntime",
                            "namespaced": True,
                            "kind": "TrainingRuntime",
                            "verbs": [
                                "delete",
                                "deletecollection",
                                "get",
                                "list",
                                "patch",
                                "create",
                                "update",
                                "watch",
                            ],
                            "shortNames": ["tr"],
                            "categories": ["nodus", "all"],
                            "storageVersionHash": Re(".+"),
                        },
                        {
                            "name": "trainingruntimes/status",
                            "singularName": "",
                            "namespaced": True,
                            "kind": "TrainingRuntime",
                            "verbs": ["get", "patch", "update"],
                        },
                        {"name": "accelerators", "namespaced": False, "kind": "Accelerator"},
                    ),
                },
            ),
        ),
    ),
    Sequence(
        "apis-without-an-aggregated-accept-is-an-api-group-list",
        f"{AGGREGATED} (legacy discovery)",
        (
            Step(
                "GET",
                "/apis",
                200,
                headers={"Accept": "application/json"},
                expect={
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": contains(
                        {"name": "nodus.dev", "preferredVersion": {"version": "v1beta1"}}
                    ),
                },
            ),
        ),
    ),
    Sequence(
        "apis-with-an-aggregated-accept-is-an-api-group-discovery-list",
        f"{AGGREGATED}; apiserver pkg/endpoints/discovery/aggregated/handler_test.go "
        f"TestBasicResponse",
        (
            Step(
                "GET",
                "/apis",
                200,
                headers={"Accept": AGGREGATED_ACCEPT},
                expect_headers={
                    "content-type": Re(
                        r"application/json;\s*g=apidiscovery\.k8s\.io;\s*v=v2;\s*as=APIGroupDiscoveryList"
                    )
                },
                expect={
                    "kind": "APIGroupDiscoveryList",
                    "apiVersion": "apidiscovery.k8s.io/v2",
                    "items": contains(
                        {
                            "metadata": {"name": "nodus.dev"},
                            "versions": [
                                {
                                    "version": "v1beta1",
                                    "freshness": "Current",
                                    "resources": contains(
                                        {
                                            "resource": "trainingruntimes",
                                            "responseKind": {
                                                "group": "nodus.dev",
                                                "version": "v1beta1",
                                                "kind": "TrainingRuntime",
                                            },
                                            "scope": "Namespaced",
                                            "singularResource": "trainingruntime",
                                            "subresources": contains(
                                                {
                                                    "subresource": "status",
                                                    "verbs": ["get", "patch", "update"],
                                                }
                                            ),
                                        },
                                        {"resource": "accelerators", "scope": "Cluster"},
                                    ),
                                }
                            ],
                        }
                    ),
                },
            ),
        ),
    ),
    Sequence(
        "api-answers-the-core-versions",
        "apiserver pkg/endpoints/discovery/legacy.go (APIVersions)",
        (
            Step(
                "GET",
                "/api",
                200,
                headers={"Accept": "application/json"},
                expect={"kind": "APIVersions", "versions": ["v1"]},
            ),
        ),
    ),
    Sequence(
        "a-namespace-is-served-as-core-v1",
        "kubernetes test/integration/namespace; api-conventions (Namespace status.phase Active)",
        (
            Step(
                "GET",
                "/api/v1/namespaces/demo",
                200,
                expect={
                    "kind": "Namespace",
                    "apiVersion": "v1",
                    "metadata": {"name": "demo"},
                    "status": {"phase": "Active"},
                },
            ),
        ),
    ),
    Sequence(
        "a-missing-namespace-is-404",
        "apiserver registry NotFound for namespaces",
        (
            Step(
                "GET",
                "/api/v1/namespaces/nowhere",
                404,
                who="root",
                expect=failure(
                    404,
                    "NotFound",
                    'namespaces "nowhere" not found',
                    {"name": "nowhere", "group": ABSENT, "kind": "namespaces"},
                ),
            ),
        ),
    ),
    Sequence(
        "core-v1-lists-namespaces-and-events",
        "apiserver pkg/endpoints/discovery (legacy core group resource list)",
        (
            Step(
                "GET",
                "/api/v1",
                200,
                expect={
                    "kind": "APIResourceList",
                    "groupVersion": "v1",
                    "resources": contains(
                        {"name": "namespaces", "namespaced": False, "kind": "Namespace"},
                        {"name": "events", "namespaced": True, "kind": "Event"},
                    ),
                },
            ),
        ),
    ),
    Sequence(
        "the-namespace-list",
        "kubernetes test/e2e/apimachinery/namespace.go (list namespaces)",
        (
            Step(
                "GET",
                "/api/v1/namespaces",
                200,
                expect={
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "items": contains({"metadata": {"name": "demo"}}),
                },
            ),
        ),
    ),
    Sequence(
        "the-events-of-a-namespace",
        "kubernetes test/e2e/instrumentation/core_events.go (list events)",
        (
            Step(
                "GET",
                "/api/v1/namespaces/demo/events",
                200,
                expect={"kind": "EventList", "apiVersion": "v1", "items": []},
            ),
        ),
    ),
    Sequence(
        "version-reports-the-build-and-emulation",
        VERSION,
        (
            Step(
                "GET",
                "/version",
                200,
                who="anonymous",
                expect={
                    "major": "1",
                    "minor": Re("3[4-6]"),
                    "emulationMajor": "1",
                    "emulationMinor": Re("3[4-6]"),
                    "minCompatibilityMajor": "1",
                    "minCompatibilityMinor": Re("3[3-5]"),
                    "gitVersion": Re(r"v1\.3[4-6]\..*"),
                    "gitCommit": ANY,
                    "gitTreeState": ANY,
                    "buildDate": ANY,
                    "goVersion": ANY,
                    "compiler": ANY,
                    "platform": ANY,
                },
            ),
        ),
    ),
    Sequence(
        "healthz-answers-ok-as-text",
        "apiserver pkg/server/healthz/healthz.go (ok, text/plain)",
        (
            Step(
                "GET",
                "/healthz",
                200,
                who="anonymous",
                text=Exactly("ok"),
                expect_headers={"content-type": "text/plain; charset=utf-8"},
            ),
            Step("GET", "/healthz/ping", 200, who="anonymous", text=Exactly("ok")),
            Step(
                "GET",
                "/healthz?verbose",
                200,
                who="anonymous",
                text=Exactly("[+]ping ok\nhealthz check passed\n"),
            ),
        ),
    ),
    Sequence(
        "openapi-v3-indexes-the-group-version",
        "kubernetes test/integration/apiserver/openapi/openapiv3_test.go",
        (
            Step(
                "GET",
                "/openapi/v3",
                200,
                expect={
                    "paths": {
                        "apis/nodus.dev/v1beta1": {
                            "serverRelativeURL": Re(r"/openapi/v3/apis/nodus\.dev/v1beta1\?hash=.+")
                        }
                    }
                },
            ),
        ),
    ),
    Sequence(
        "openapi-v2-is-not-served-by-design",
        "docs/kube-compatibility.md (OpenAPI v3 only); its coverage item 9",
        (Step("GET", "/openapi/v2", 404),),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    if sequence.accelerators:
        seeding.seed_accelerators()
    run(sequence, in_process)
