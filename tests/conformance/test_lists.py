"""Lists: label and field selectors, limit/continue, resourceVersion rules and Table output."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    TABLE,
    TRS,
    Sequence,
    Step,
    create,
    failure,
    merge,
    params,
    run,
    runtime,
    with_meta,
)
from tests.conformance.patterns import (
    ABSENT,
    RV,
    UID,
    Item,
    Length,
    Re,
    contains,
)

CHUNKING = "kubernetes test/e2e/apimachinery/chunking.go"
TABLES = "apiextensions-apiserver test/integration/table_test.go TestTableGet"
TABLE_E2E = "kubernetes test/e2e/apimachinery/table_conversion.go"
FIELDSELECTOR = (
    "apiextensions-apiserver test/integration/fieldselector_test.go TestSelectableFields"
)
APISERVER = "apiserver pkg/endpoints/apiserver_test.go"
CONVENTIONS = "community contributors/devel/sig-architecture/api-conventions.md"
CACHER = "apiserver pkg/storage/cacher/cacher.go"
DELEGATOR = "apiserver pkg/storage/cacher/delegator/interface.go"
STORAGE = "apiserver pkg/storage/interfaces.go"


def labelled(name: str, **labels: str) -> Step:
    return Step("POST", TRS, 201, with_meta(runtime(name), labels=labels))


def listed(query: str, names: list[str], **more: object) -> Step:
    """A list with `query` answering exactly `names`, in key order."""
    return Step(
        "GET",
        f"{TRS}?{query}",
        200,
        expect={"items": [{"metadata": {"name": n}} for n in names], **more},
    )


def labels_select(selector: str, names: list[str]) -> Step:
    return listed(f"labelSelector={quote(selector)}", names)


THREE = (
    labelled("a", app="t", tier="gold"),
    labelled("b", app="t", tier="silver", old="y"),
    labelled("c", size="7"),
)

SEQUENCES = [
    Sequence(
        "label-selector-equality",
        "apimachinery pkg/labels/selector_test.go TestSelectorMatches; api-conventions Label "
        "selectors",
        (*THREE, labels_select("app=t", ["a", "b"]), labels_select("app==t,tier=gold", ["a"])),
    ),
    Sequence(
        "label-selector-inequality-matches-absent-keys",
        "apimachinery pkg/labels/selector_test.go TestSelectorMatches (!= matches a missing label)",
        (*THREE, labels_select("tier!=gold", ["b", "c"])),
    ),
    Sequence(
        "label-selector-set-based",
        "apimachinery pkg/labels/selector_test.go TestSetSelectorParser",
        (
            *THREE,
            labels_select("tier in (gold,silver),!old", ["a"]),
            labels_select("tier notin (gold)", ["b", "c"]),
        ),
    ),
    Sequence(
        "label-selector-existence",
        "apimachinery pkg/labels/selector_test.go (exists / does not exist)",
        (*THREE, labels_select("app", ["a", "b"]), labels_select("!app", ["c"])),
    ),
    Sequence(
        "label-selector-numeric-comparison",
        "apimachinery pkg/labels/selector.go (GreaterThan / LessThan)",
        (*THREE, labels_select("size>5", ["c"]), labels_select("size<5", [])),
    ),
    Sequence(
        "a-label-selector-that-does-not-parse-is-400",
        f"{APISERVER} TestRequestsWithInvalidQuery",
        (
            Step(
                "GET",
                f"{TRS}?labelSelector={quote('a in ()')}",
                400,
                expect=failure(400, "BadRequest"),
            ),
        ),
    ),
    Sequence(
        "field-selector-on-metadata-name",
        "apiextensions-apiserver test/integration/basic_test.go testFieldSelector",
        (create("a"), create("b"), listed("fieldSelector=metadata.name%3Db", ["b"])),
    ),
    Sequence(
        "field-selector-on-metadata-namespace",
        "apiextensions-apiserver pkg/registry/customresource/strategy.go GetAttrs",
        (
            create("a"),
            listed("fieldSelector=metadata.namespace%3Ddemo", ["a"]),
            listed("fieldSelector=metadata.namespace%3Dother", []),
        ),
    ),
    Sequence(
        "field-selector-on-a-selectable-field",
        FIELDSELECTOR,
        (
            create("a"),
            Step("POST", TRS, 201, runtime("b", task="DPO")),
            listed("fieldSelector=spec.task%3DDPO", ["b"]),
            listed("fieldSelector=spec.task!%3DDPO", ["a"]),
        ),
    ),
    Sequence(
        "field-selector-on-an-unselectable-field-is-400",
        FIELDSELECTOR + " (field label not supported)",
        (
            Step(
                "GET",
                f"{TRS}?fieldSelector=spec.image%3Dx",
                400,
                expect=failure(400, "BadRequest", "field label not supported: spec.image"),
            ),
        ),
    ),
    Sequence(
        "label-and-field-selectors-combine",
        FIELDSELECTOR + " (color and quantity)",
        (
            labelled("a", app="t"),
            labelled("b", app="t"),
            listed("labelSelector=app%3Dt&fieldSelector=metadata.name%3Da", ["a"]),
        ),
    ),
    Sequence(
        "limit-answers-a-page-a-continue-token-and-the-remaining-count",
        f"{CHUNKING} should return chunks of results for list calls",
        (
            create("a"),
            create("b"),
            create("c"),
            listed(
                "limit=2",
                ["a", "b"],
                metadata={"continue": Re(".+"), "remainingItemCount": 1, "resourceVersion": RV},
            ),
        ),
    ),
    Sequence(
        "continue-answers-the-next-page-at-the-same-resource-version",
        f"{CHUNKING} should return chunks of results for list calls",
        (
            create("a"),
            create("b"),
            create("c"),
            Step(
                "GET",
                f"{TRS}?limit=2",
                200,
                save={"token": "metadata.continue", "at": "metadata.resourceVersion"},
            ),
            create("d"),
            Step(
                "GET",
                f"{TRS}?limit=2&continue={{token}}",
                200,
                expect={
                    "items": [{"metadata": {"name": "c"}}],
                    "metadata": {"resourceVersion": "{at}", "continue": ABSENT},
                },
            ),
        ),
    ),
    Sequence(
        "the-last-page-has-no-continue-and-no-remaining-count",
        f"{CHUNKING}",
        (
            create("a"),
            create("b"),
            listed(
                "limit=2", ["a", "b"], metadata={"continue": ABSENT, "remainingItemCount": ABSENT}
            ),
        ),
    ),
    Sequence(
        "a-selector-leaves-out-the-remaining-count",
        "apiserver pkg/storage/etcd3/store.go GetList (remainingItemCount only without a "
        "predicate)",
        (
            labelled("a", app="t"),
            labelled("b", app="t"),
            listed(
                "limit=1&labelSelector=app%3Dt",
                ["a"],
                metadata={"continue": Re(".+"), "remainingItemCount": ABSENT},
            ),
        ),
    ),
    Sequence(
        "a-malformed-continue-token-is-400",
        "apiserver pkg/storage/continue.go DecodeContinue",
        (
            Step(
                "GET",
                f"{TRS}?limit=1&continue=garbage!",
                400,
                expect=failure(400, "BadRequest", contains("invalid continue token")),
            ),
        ),
    ),
    Sequence(
        "a-resource-version-with-continue-is-400",
        "apiserver pkg/storage/etcd3/store.go GetList (specifying resource version is not allowed "
        "when using continue)",
        (
            create("a"),
            create("b"),
            Step("GET", f"{TRS}?limit=1", 200, save={"token": "metadata.continue"}),
            Step(
                "GET",
                f"{TRS}?limit=1&continue={{token}}&resourceVersion=1",
                400,
                expect=failure(400, "BadRequest", contains("not allowed when using continue")),
            ),
        ),
    ),
    Sequence(
        "resource-version-match-without-resource-version-is-422",
        "apiserver pkg/apis/meta/internalversion/validation ValidateListOptions",
        (
            Step(
                "GET",
                f"{TRS}?resourceVersionMatch=NotOlderThan",
                422,
                expect=failure(
                    422,
                    "Invalid",
                    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    {"group": "meta.k8s.io", "kind": "ListOptions"},
                ),
            ),
        ),
    ),
    Sequence(
        "an-unknown-resource-version-match-is-422",
        "apiserver pkg/apis/meta/internalversion/validation ValidateListOptions",
        (
            Step(
                "GET",
                f"{TRS}?resourceVersion=1&resourceVersionMatch=Newest",
                422,
                expect=failure(
                    422, "Invalid", contains('resourceVersionMatch: Unsupported value: "Newest"')
                ),
            ),
        ),
    ),
    Sequence(
        "exact-match-at-resource-version-zero-is-422",
        "apiserver pkg/apis/meta/internalversion/validation ValidateListOptions",
        (
            Step(
                "GET",
                f"{TRS}?resourceVersion=0&resourceVersionMatch=Exact",
                422,
                expect=failure(422, "Invalid", contains('forbidden for resourceVersion "0"')),
            ),
        ),
    ),
    Sequence(
        "send-initial-events-on-a-list-is-422",
        "apiserver pkg/apis/meta/internalversion/validation ValidateListOptions (not a watch)",
        (
            Step(
                "GET",
                f"{TRS}?sendInitialEvents=true",
                422,
                expect=failure(422, "Invalid", contains("sendInitialEvents: Forbidden")),
            ),
        ),
    ),
    Sequence(
        "an-unparsable-resource-version-is-400",
        "apiserver pkg/storage/etcd3 ParseResourceVersion",
        (
            Step(
                "GET",
                f"{TRS}?resourceVersion=abc",
                400,
                expect=failure(400, "BadRequest", contains("invalid resource version")),
            ),
        ),
    ),
    Sequence(
        "an-exact-list-answers-the-past",
        "apiserver pkg/storage/testing/store_tests.go RunTestListResourceVersionMatch (Exact)",
        (
            create("a"),
            Step("GET", TRS, 200, save={"at": "metadata.resourceVersion"}),
            merge("a", {"spec": {"task": "DPO"}}),
            create("b"),
            Step(
                "GET",
                f"{TRS}?resourceVersion={{at}}&resourceVersionMatch=Exact",
                200,
                expect={
                    "metadata": {"resourceVersion": "{at}"},
                    "items": [{"metadata": {"name": "a"}, "spec": {"task": "SFT"}}],
                },
            ),
        ),
    ),
    Sequence(
        "resource-version-zero-answers-any-state",
        'api-conventions Resource versions (resourceVersion="0": any)',
        (
            create("a"),
            Step("GET", f"{TRS}?resourceVersion=0", 200, expect={"kind": "TrainingRuntimeList"}),
        ),
    ),
    Sequence(
        "limit-is-ignored-at-resource-version-zero",
        f'{CACHER} computeListLimit (limit 0 when resourceVersion is "0"); '
        f"{DELEGATOR} ShouldDelegateList (rv=0 with a limit is served by the cache)",
        (
            create("a"),
            create("b"),
            create("c"),
            *(
                listed(
                    query,
                    ["a", "b", "c"],
                    metadata={"continue": ABSENT, "remainingItemCount": ABSENT},
                )
                for query in (
                    "limit=1&resourceVersion=0",
                    "limit=1&resourceVersion=0&resourceVersionMatch=NotOlderThan",
                    "limit=1&resourceVersion=0&labelSelector=x%21%3Dy",
                )
            ),
        ),
    ),
    Sequence(
        "a-continue-at-resource-version-zero-answers-the-rest-unpaged",
        f'{STORAGE} ValidateListOptions (continue allows resourceVersion "0"); {CACHER} '
        'GetList (the snapshot from the continue key on, limit ignored at "0")',
        (
            create("a"),
            create("b"),
            create("c"),
            Step(
                "GET",
                f"{TRS}?limit=1",
                200,
                expect={"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": Re(".+")}},
                save={"token": "metadata.continue", "at": "metadata.resourceVersion"},
            ),
            create("d"),
            listed(
                "limit=1&resourceVersion=0&continue={token}",
                ["b", "c"],
                metadata={"continue": ABSENT, "resourceVersion": "{at}"},
            ),
        ),
    ),
    Sequence(
        "limit-zero-is-no-limit",
        "apiserver pkg/storage/etcd3/store.go GetList (limit 0: everything)",
        (
            create("a"),
            create("b"),
            listed("limit=0", ["a", "b"], metadata={"continue": ABSENT}),
        ),
    ),
    Sequence(
        "a-table-with-include-object-metadata",
        f"{APISERVER} TestGetTable (includeObject=Metadata)",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}?includeObject=Metadata",
                200,
                headers={"Accept": TABLE},
                expect={"rows": [{"object": {"kind": "PartialObjectMetadata", "spec": ABSENT}}]},
            ),
        ),
    ),
    Sequence(
        "a-list-in-a-namespace-that-does-not-exist-is-empty",
        "apiserver store List (no namespace check on list)",
        (
            Step(
                "GET",
                "/apis/nodus.dev/v1beta1/namespaces/nowhere/trainingruntimes",
                200,
                who="root",
                expect={"kind": "TrainingRuntimeList", "items": []},
            ),
        ),
    ),
    Sequence(
        "a-table-list-has-the-name-column-first-and-partial-metadata-rows",
        f"{TABLES}; {TABLE_E2E} should return generic metadata details across all namespaces",
        (
            create("a"),
            Step(
                "GET",
                TRS,
                200,
                headers={"Accept": TABLE},
                expect={
                    "kind": "Table",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"resourceVersion": RV},
                    "columnDefinitions": contains(
                        {"name": "Name", "type": "string", "format": "name", "priority": 0}
                    ),
                    "rows": [
                        {
                            "cells": contains("a"),
                            "object": {
                                "kind": "PartialObjectMetadata",
                                "apiVersion": "meta.k8s.io/v1",
                                "metadata": {"name": "a", "namespace": "demo", "uid": "{uid}"},
                            },
                        }
                    ],
                },
            ),
        ),
    ),
    Sequence(
        "a-tables-first-column-is-the-name",
        TABLES + " (Cells[0] is the name)",
        (
            create("a"),
            Step(
                "GET",
                TRS,
                200,
                headers={"Accept": TABLE},
                expect={
                    "columnDefinitions": Item(0, {"name": "Name", "format": "name"}),
                    "rows": [{"cells": Item(0, "a")}],
                },
            ),
        ),
    ),
    Sequence(
        "a-table-of-one-object",
        f"{APISERVER} TestGetTable",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}/a",
                200,
                headers={"Accept": TABLE},
                expect={
                    "kind": "Table",
                    "rows": [{"cells": contains("a"), "object": {"kind": "PartialObjectMetadata"}}],
                },
            ),
        ),
    ),
    Sequence(
        "a-table-with-include-object-none-writes-null-objects",
        f"{APISERVER} TestGetTable (includeObject=None)",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}?includeObject=None",
                200,
                headers={"Accept": TABLE},
                expect={"rows": [{"object": None}]},
            ),
        ),
    ),
    Sequence(
        "a-table-with-include-object-object-embeds-the-object",
        f"{APISERVER} TestGetTable (includeObject=Object)",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}?includeObject=Object",
                200,
                headers={"Accept": TABLE},
                expect={"rows": [{"object": {"kind": "TrainingRuntime", "spec": {"task": "SFT"}}}]},
            ),
        ),
    ),
    Sequence(
        "a-table-with-an-unknown-include-object-is-400",
        "apimachinery pkg/apis/meta/v1/validation ValidateTableOptions",
        (
            Step(
                "GET",
                f"{TRS}?includeObject=Everything",
                400,
                headers={"Accept": TABLE},
                expect=failure(400, "BadRequest", contains("includeObject")),
            ),
        ),
    ),
    Sequence(
        "a-table-for-a-v1beta1-only-client",
        TABLES + " (metav1beta1 Table)",
        (
            create("a"),
            Step(
                "GET",
                TRS,
                200,
                headers={"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"},
                expect={"kind": "Table", "apiVersion": "meta.k8s.io/v1beta1"},
            ),
        ),
    ),
    Sequence(
        "a-paged-table-carries-the-continue-token",
        f"{CHUNKING} should support continue listing from the last key (Table)",
        (
            create("a"),
            create("b"),
            Step(
                "GET",
                f"{TRS}?limit=1",
                200,
                headers={"Accept": TABLE},
                expect={"kind": "Table", "metadata": {"continue": Re(".+")}, "rows": Length(1)},
            ),
        ),
    ),
    Sequence(
        "an-empty-table-still-has-its-columns",
        f"{TABLE_E2E} (no rows)",
        (
            Step(
                "GET",
                TRS,
                200,
                headers={"Accept": TABLE},
                expect={
                    "kind": "Table",
                    "rows": [],
                    "columnDefinitions": contains({"name": "Name"}),
                },
            ),
        ),
    ),
    Sequence(
        "an-unknown-as-without-a-fallback-is-406",
        "apiserver pkg/endpoints/handlers/negotiation (NotAcceptable)",
        (
            Step(
                "GET",
                TRS,
                406,
                headers={"Accept": "application/json;as=Tabel;v=v1;g=meta.k8s.io"},
                expect=failure(
                    406, "NotAcceptable", contains("only the following media types are accepted")
                ),
            ),
        ),
    ),
    Sequence(
        "a-partial-object-metadata-list",
        "apiserver pkg/endpoints/apiserver_test.go TestGetPartialObjectMetadata",
        (
            create("a"),
            Step(
                "GET",
                TRS,
                200,
                headers={
                    "Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
                },
                expect={
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "items": [
                        {
                            "kind": "PartialObjectMetadata",
                            "apiVersion": "meta.k8s.io/v1",
                            "metadata": {"name": "a"},
                            "spec": ABSENT,
                        }
                    ],
                },
            ),
        ),
    ),
    Sequence(
        "a-partial-object-metadata-get",
        "apiserver pkg/endpoints/apiserver_test.go TestGetPartialObjectMetadata",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}/a",
                200,
                headers={"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
                expect={
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"name": "a", "namespace": "demo", "uid": UID},
                    "spec": ABSENT,
                    "status": ABSENT,
                },
            ),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
