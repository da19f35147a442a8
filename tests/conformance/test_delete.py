"""Deletion: preconditions, finalizers, propagation policies and collections."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    DELETE_HANDLER,
    DRYRUN,
    TRS,
    Sequence,
    Step,
    cause,
    create,
    delete,
    failure,
    get,
    gone,
    held,
    merge,
    params,
    run,
    runtime,
    tr_details,
    with_meta,
)
from tests.conformance.patterns import (
    TIME,
    Exactly,
    Length,
    Re,
    contains,
    later,
    same,
)

FINALIZATION = "apiextensions-apiserver test/integration/finalization_test.go"
APISERVER = "apiserver pkg/endpoints/apiserver_test.go"
STORE = "apiserver pkg/registry/generic/registry/store_test.go"


SEQUENCES = [
    Sequence(
        "delete-answers-a-success-status-with-the-uid",
        f"{APISERVER} TestDelete; {STORE} TestStoreDelete",
        (
            create("a"),
            delete(
                "a",
                expect={
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": Exactly(tr_details("a", uid="{uid}")),
                },
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "delete-of-a-missing-object-is-404",
        f"{APISERVER} TestDeleteMissing",
        (
            delete(
                "ghost",
                404,
                failure(
                    404,
                    "NotFound",
                    'trainingruntimes.nodus.dev "ghost" not found',
                    tr_details("ghost"),
                ),
            ),
        ),
    ),
    Sequence(
        "delete-with-a-uid-precondition-that-differs-is-409",
        "apiserver pkg/registry/rest/delete.go BeforeDelete (preconditions, Resource: gvk.Kind)",
        (
            create("a"),
            delete(
                "a",
                409,
                failure(
                    409,
                    "Conflict",
                    'Operation cannot be fulfilled on TrainingRuntime.nodus.dev "a": the UID in '
                    "the precondition (00000000-0000-0000-0000-000000000000) does not match the "
                    "UID in record ({uid}). The object might have been deleted and then recreated",
                    {"name": "a", "group": "nodus.dev", "kind": "TrainingRuntime"},
                ),
                body={"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}},
            ),
            get("a"),
        ),
    ),
    Sequence(
        "delete-with-a-resource-version-precondition-that-differs-is-409",
        f"{STORE} TestStoreGracefulDeleteWithResourceVersion; apiserver rest/delete.go "
        f"BeforeDelete",
        (
            create("a"),
            merge("a", {"metadata": {"labels": {"x": "y"}}}),
            delete(
                "a",
                409,
                failure(
                    409,
                    "Conflict",
                    Re(
                        r'Operation cannot be fulfilled on TrainingRuntime\.nodus\.dev "a": the '
                        r"ResourceVersion in the precondition \(\d+\) does not match the "
                        r"ResourceVersion in record \(\d+\)\. The object might have been modified"
                    ),
                    {"name": "a", "group": "nodus.dev", "kind": "TrainingRuntime"},
                ),
                body={"preconditions": {"resourceVersion": "{rv}"}},
            ),
            get("a"),
        ),
    ),
    Sequence(
        "delete-with-matching-preconditions-deletes",
        f"{STORE} TestStoreDelete (preconditions met)",
        (
            create("a"),
            delete("a", body={"preconditions": {"uid": "{uid}", "resourceVersion": "{rv}"}}),
            gone("a"),
        ),
    ),
    Sequence(
        "delete-options-in-the-query-are-honoured",
        f"{APISERVER} TestDeleteWithOptionsQuery",
        (create("a"), delete("a?dryRun=All"), get("a")),
    ),
    Sequence(
        "delete-with-an-unknown-propagation-policy-is-422",
        "apimachinery pkg/apis/meta/v1/validation ValidateDeleteOptions",
        (
            create("a"),
            delete(
                "a",
                422,
                failure(
                    422,
                    "Invalid",
                    contains('propagationPolicy: Unsupported value: "Sideways"'),
                    {"group": "meta.k8s.io", "kind": "DeleteOptions"},
                ),
                body={"propagationPolicy": "Sideways"},
            ),
            get("a"),
        ),
    ),
    Sequence(
        "delete-with-finalizers-marks-the-object-and-answers-it",
        f"{FINALIZATION} TestFinalization; apiserver store.go markAsDeleting",
        (
            held(),
            delete(
                "a",
                expect={
                    "kind": "TrainingRuntime",
                    "metadata": {
                        "deletionTimestamp": TIME,
                        "deletionGracePeriodSeconds": 0,
                        "generation": 2,
                        "finalizers": ["nodus.dev/hold"],
                        "resourceVersion": later("rv"),
                    },
                },
            ),
            get("a", expect={"metadata": {"deletionTimestamp": TIME}}),
        ),
    ),
    Sequence(
        "removing-the-last-finalizer-deletes-the-object",
        f"{FINALIZATION} TestFinalization (finalizers removed → gone)",
        (
            held(),
            delete("a"),
            merge("a", {"metadata": {"finalizers": None}}, expect={"kind": "TrainingRuntime"}),
            gone("a"),
        ),
    ),
    Sequence(
        "removing-one-of-two-finalizers-keeps-the-object",
        f"{FINALIZATION} TestFinalizationAndDeletion",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), finalizers=["nodus.dev/one", "nodus.dev/two"]),
            ),
            delete("a"),
            merge(
                "a",
                {"metadata": {"finalizers": ["nodus.dev/two"]}},
                expect={"metadata": {"finalizers": ["nodus.dev/two"], "deletionTimestamp": TIME}},
            ),
            get("a"),
        ),
    ),
    Sequence(
        "no-new-finalizers-once-deletion-started",
        "apimachinery pkg/api/validation/objectmeta.go ValidateNoNewFinalizers",
        (
            held(),
            delete("a"),
            merge(
                "a",
                {"metadata": {"finalizers": ["nodus.dev/hold", "nodus.dev/late"]}},
                422,
                failure(
                    422,
                    "Invalid",
                    'TrainingRuntime.nodus.dev "a" is invalid: metadata.finalizers: Forbidden: no '
                    "new finalizers can be added if the object is being deleted, found new "
                    'finalizers []string{"nodus.dev/late"}',
                    {
                        "causes": [
                            cause(
                                "FieldValueForbidden",
                                "metadata.finalizers",
                                "Forbidden: no new finalizers can be added if the object is "
                                'being deleted, found new finalizers []string{"nodus.dev/late"}',
                            )
                        ]
                    },
                ),
            ),
        ),
    ),
    Sequence(
        "a-spec-change-while-deleting-is-still-allowed",
        f"{FINALIZATION} TestFinalization (updates while terminating)",
        (
            held(),
            delete("a"),
            merge(
                "a",
                {"spec": {"task": "DPO"}},
                expect={"spec": {"task": "DPO"}, "metadata": {"deletionTimestamp": TIME}},
            ),
        ),
    ),
    Sequence(
        "a-write-cannot-clear-the-deletion-timestamp",
        "apiserver pkg/registry/rest/update.go BeforeUpdate (deletionTimestamp kept)",
        (
            held(),
            delete("a", save={"ts": "metadata.deletionTimestamp"}),
            merge(
                "a",
                {"metadata": {"deletionTimestamp": None, "labels": {"x": "y"}}},
                expect={"metadata": {"deletionTimestamp": "{ts}", "labels": {"x": "y"}}},
            ),
        ),
    ),
    Sequence(
        "a-second-delete-of-a-terminating-object-changes-nothing",
        f"{STORE} TestGracefulStoreHandleFinalizers; store.go "
        f"updateForGracefulDeletionAndFinalizers",
        (
            held(),
            delete(
                "a", save={"rv2": "metadata.resourceVersion", "ts": "metadata.deletionTimestamp"}
            ),
            delete(
                "a",
                expect={
                    "metadata": {
                        "resourceVersion": same("rv2"),
                        "deletionTimestamp": "{ts}",
                        "generation": 2,
                    }
                },
            ),
        ),
    ),
    Sequence(
        "background-propagation-deletes-at-once",
        f"{STORE} TestStoreDeletionPropagation (Background)",
        (
            create("a"),
            delete("a", body={"propagationPolicy": "Background"}, expect={"status": "Success"}),
            gone("a"),
        ),
    ),
    Sequence(
        "foreground-propagation-holds-the-object-with-the-foreground-finalizer",
        f"{STORE} TestStoreDeletionPropagation (Foreground); store.go "
        "deletionFinalizersForGarbageCollection",
        (
            create("a"),
            delete(
                "a",
                body={"propagationPolicy": "Foreground"},
                expect={
                    "kind": "TrainingRuntime",
                    "metadata": {
                        "finalizers": ["foregroundDeletion"],
                        "deletionTimestamp": TIME,
                    },
                },
            ),
        ),
    ),
    Sequence(
        "orphan-propagation-holds-the-object-with-the-orphan-finalizer",
        f"{STORE} TestStoreDeleteWithOrphanDependents; store.go "
        "deletionFinalizersForGarbageCollection",
        (
            create("a"),
            delete(
                "a",
                body={"propagationPolicy": "Orphan"},
                expect={
                    "kind": "TrainingRuntime",
                    "metadata": {"finalizers": ["orphan"], "deletionTimestamp": TIME},
                },
            ),
        ),
    ),
    Sequence(
        "deletecollection-by-field-selector",
        f"{STORE} TestStoreDeleteCollection; fieldselector_test.go testDeleteCollection",
        (
            create("a"),
            Step("POST", TRS, 201, runtime("b", task="DPO")),
            Step(
                "DELETE",
                f"{TRS}?fieldSelector=spec.task%3DDPO",
                200,
                expect={"items": [{"metadata": {"name": "b"}}]},
            ),
            get("a"),
            gone("b"),
        ),
    ),
    Sequence(
        "deletecollection-of-held-objects-marks-them",
        f"{STORE} TestStoreDeleteCollection (finalizers)",
        (
            held("a"),
            Step(
                "DELETE",
                TRS,
                200,
                expect={"items": [{"metadata": {"name": "a", "deletionTimestamp": TIME}}]},
            ),
            get("a", expect={"metadata": {"deletionTimestamp": TIME}}),
        ),
    ),
    Sequence(
        "deletecollection-answers-the-deleted-items-as-a-list",
        f"{DELETE_HANDLER} TestDeleteCollection; {STORE} TestStoreDeleteCollection",
        (
            create("a"),
            create("b"),
            Step(
                "DELETE",
                TRS,
                200,
                expect={
                    "kind": "TrainingRuntimeList",
                    "apiVersion": "nodus.dev/v1beta1",
                    "items": Length(2),
                },
            ),
            Step("GET", TRS, 200, expect={"items": []}),
        ),
    ),
    Sequence(
        "deletecollection-by-label-deletes-only-the-selection",
        f"{STORE} TestStoreDeleteCollection (label selector)",
        (
            Step("POST", TRS, 201, with_meta(runtime("a"), labels={"tier": "gold"})),
            Step("POST", TRS, 201, with_meta(runtime("b"), labels={"tier": "lead"})),
            Step(
                "DELETE",
                f"{TRS}?labelSelector=tier%3Dgold",
                200,
                expect={"items": [{"metadata": {"name": "a"}}]},
            ),
            gone("a"),
            get("b"),
        ),
    ),
    Sequence(
        "deletecollection-of-nothing-is-an-empty-list",
        f"{STORE} TestStoreDeleteCollectionNotFound",
        (Step("DELETE", TRS, 200, expect={"kind": "TrainingRuntimeList", "items": []}),),
    ),
    Sequence(
        "deletecollection-with-dry-run-deletes-nothing",
        f"{DRYRUN} (DeleteCollection dryRun)",
        (
            create("a"),
            Step("DELETE", f"{TRS}?dryRun=All", 200, expect={"items": Length(1)}),
            get("a"),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
