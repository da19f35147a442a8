"""Update and patch: optimistic concurrency, preconditions, merge and JSON patches, generation."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    IMAGE,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    TRS,
    Sequence,
    Step,
    cause,
    create,
    failure,
    get,
    invalid,
    merge,
    params,
    run,
    runtime,
    tr_details,
    with_meta,
)
from tests.conformance.patterns import (
    ABSENT,
    Exactly,
    Length,
    all_of,
    contains,
    later,
    same,
)

APISERVER = "apiserver pkg/endpoints/apiserver_test.go"
REST = "apiserver pkg/endpoints/handlers/rest_test.go"
STORE = "apiserver pkg/registry/generic/registry/store_test.go"
BASIC = "apiextensions-apiserver test/integration/basic_test.go"
SUBRESOURCES = "apiextensions-apiserver test/integration/subresources_test.go"
CONVENTIONS = "community contributors/devel/sig-architecture/api-conventions.md"

MODIFIED = (
    'Operation cannot be fulfilled on trainingruntimes.nodus.dev "a": the object has been '
    "modified; please apply your changes to the latest version and try again"
)
OTHER_IMAGE = "registry.nodus.dev/trainers/sft:2.0@sha256:" + "cd" * 32


def put(name: str, body: object, status: int = 200, expect: object = None, **kw: object) -> Step:
    return Step("PUT", f"{TRS}/{name}", status, body, expect=expect, **kw)  # type: ignore[arg-type]


def current(name: str = "a", rv: str = "{rv}", **spec: object) -> dict:
    """The runtime as a client read it at `rv` (a PUT body)."""
    return with_meta(runtime(name, **spec), resourceVersion=rv)


SEQUENCES = [
    Sequence(
        "put-with-the-current-resource-version-updates",
        f"{APISERVER} TestUpdate; {STORE} TestStoreUpdate",
        (
            create("a"),
            put(
                "a",
                current(task="DPO"),
                expect={
                    "spec": {"task": "DPO"},
                    "metadata": {"resourceVersion": later("rv"), "generation": 2},
                },
            ),
        ),
    ),
    Sequence(
        "put-without-a-resource-version-is-422-for-custom-resources",
        "apiserver pkg/registry/generic/registry/store.go Update (AllowUnconditionalUpdate false)",
        (
            create("a"),
            put(
                "a",
                runtime("a", task="DPO"),
                422,
                failure(
                    422,
                    "Invalid",
                    'trainingruntimes.nodus.dev "a" is invalid: metadata.resourceVersion: Invalid '
                    "value: 0x0: must be specified for an update",
                    {
                        "name": "a",
                        "group": "nodus.dev",
                        "kind": "trainingruntimes",
                        "causes": [
                            cause(
                                "FieldValueInvalid",
                                "metadata.resourceVersion",
                                "Invalid value: 0x0: must be specified for an update",
                            )
                        ],
                    },
                ),
            ),
            get("a", expect={"spec": {"task": "SFT"}, "metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "put-with-a-stale-resource-version-is-409-conflict",
        f"{REST} TestPatchResourceWithStaleVersionConflict; {CONVENTIONS} Concurrency Control",
        (
            create("a"),
            merge("a", {"metadata": {"labels": {"x": "y"}}}),
            put("a", current(task="KTO"), 409, failure(409, "Conflict", MODIFIED, tr_details("a"))),
            get("a", expect={"spec": {"task": "SFT"}}),
        ),
    ),
    Sequence(
        "put-of-a-missing-object-is-404-custom-resources-do-not-create-on-update",
        f"{APISERVER} TestUpdateMissing",
        (
            put(
                "ghost",
                current("ghost", rv="1"),
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
        "put-naming-another-object-is-400",
        f"{APISERVER} TestUpdateRequiresMatchingName",
        (
            create("a"),
            put(
                "a",
                current("b"),
                400,
                failure(
                    400,
                    "BadRequest",
                    "the name of the object (b) does not match the name on the URL (a)",
                ),
            ),
        ),
    ),
    Sequence(
        "put-naming-another-namespace-is-400",
        "apiserver pkg/registry/rest/meta.go EnsureObjectNamespaceMatchesRequestNamespace; "
        "handlers/update.go",
        (
            create("a"),
            put(
                "a",
                with_meta(current(), namespace="other"),
                400,
                failure(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                ),
            ),
        ),
    ),
    Sequence(
        "put-without-changes-writes-nothing",
        f"{STORE} TestNoOpUpdates",
        (
            create("a"),
            put(
                "a",
                current(),
                expect={"metadata": {"resourceVersion": same("rv"), "generation": 1}},
            ),
        ),
    ),
    Sequence(
        "a-metadata-only-change-keeps-the-generation",
        f"{SUBRESOURCES} TestGeneration; {CONVENTIONS} Metadata (generation)",
        (
            create("a"),
            merge(
                "a",
                {"metadata": {"labels": {"tier": "gold"}, "annotations": {"n": "1"}}},
                expect={"metadata": {"generation": 1, "resourceVersion": later("rv")}},
            ),
        ),
    ),
    Sequence(
        "a-spec-change-bumps-the-generation-once-per-write",
        f"{SUBRESOURCES} TestGeneration",
        (
            create("a"),
            merge("a", {"spec": {"task": "DPO"}}, expect={"metadata": {"generation": 2}}),
            merge("a", {"spec": {"task": "KTO"}}, expect={"metadata": {"generation": 3}}),
            merge("a", {"spec": {"task": "KTO"}}, expect={"metadata": {"generation": 3}}),
        ),
    ),
    Sequence(
        "merge-patch-sets-and-null-deletes",
        f"{BASIC} TestPatch; RFC 7386",
        (
            Step("POST", TRS, 201, with_meta(runtime("a"), labels={"app": "t", "keep": "k"})),
            merge(
                "a",
                {"metadata": {"labels": {"app": None, "tier": "gold"}}},
                expect={"metadata": {"labels": Exactly({"keep": "k", "tier": "gold"})}},
            ),
        ),
    ),
    Sequence(
        "merge-patch-carrying-a-stale-resource-version-is-409",
        f"{REST} TestPatchResourceWithVersionConflict",
        (
            create("a"),
            merge("a", {"metadata": {"labels": {"x": "y"}}}),
            merge(
                "a",
                {"metadata": {"resourceVersion": "{rv}"}, "spec": {"task": "DPO"}},
                409,
                failure(409, "Conflict", MODIFIED, tr_details("a")),
            ),
        ),
    ),
    Sequence(
        "merge-patch-carrying-the-current-resource-version-applies",
        f"{REST} TestPatchResourceWithVersionConflict (matching version)",
        (
            create("a"),
            merge(
                "a",
                {"metadata": {"resourceVersion": "{rv}"}, "spec": {"task": "DPO"}},
                expect={"spec": {"task": "DPO"}},
            ),
        ),
    ),
    Sequence(
        "merge-patch-of-a-missing-object-is-404",
        f"{BASIC} TestPatch (not found)",
        (
            merge(
                "ghost",
                {"spec": {"task": "DPO"}},
                404,
                failure(404, "NotFound", 'trainingruntimes.nodus.dev "ghost" not found'),
            ),
        ),
    ),
    Sequence(
        "merge-patch-that-is-not-json-is-400",
        "apiserver pkg/endpoints/handlers/patch.go applyJSPatch (error decoding patch)",
        (
            create("a"),
            merge(
                "a", "{not json", 400, failure(400, "BadRequest", contains("error decoding patch"))
            ),
        ),
    ),
    Sequence(
        "merge-patch-leaving-the-object-invalid-is-422",
        f"{BASIC} TestPatch; apiextensions-apiserver test/integration/validation_test.go "
        "TestCustomResourceUpdateValidation",
        (
            create("a"),
            merge(
                "a",
                {"spec": {"task": "Nope"}},
                422,
                failure(
                    422,
                    "Invalid",
                    contains(
                        'TrainingRuntime.nodus.dev "a" is invalid: spec.task: Unsupported value'
                    ),
                    {"causes": contains(cause("FieldValueNotSupported", "spec.task"))},
                ),
            ),
            get("a", expect={"spec": {"task": "SFT"}, "metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "merge-patch-changing-the-uid-is-422-immutable",
        "apiserver pkg/endpoints/handlers/patch.go (DefaultUpdatedObjectInfo(nil, ...): no uid "
        "precondition); apimachinery pkg/api/validation/objectmeta.go ValidateObjectMetaUpdate",
        (
            create("a"),
            merge(
                "a",
                {"metadata": {"uid": "00000000-0000-0000-0000-000000000000"}},
                422,
                invalid(
                    "a",
                    'TrainingRuntime.nodus.dev "a" is invalid: metadata.uid: Invalid value: '
                    '"00000000-0000-0000-0000-000000000000": field is immutable',
                    [
                        cause(
                            "FieldValueInvalid",
                            "metadata.uid",
                            'Invalid value: "00000000-0000-0000-0000-000000000000": field is '
                            "immutable",
                        )
                    ],
                ),
            ),
        ),
    ),
    Sequence(
        "put-naming-another-uid-is-a-failed-precondition",
        "apiserver pkg/registry/rest/update.go defaultUpdatedObjectInfo.Preconditions; "
        "pkg/storage/interfaces.go Preconditions.Check",
        (
            create("a"),
            put(
                "a",
                with_meta(current(), uid="00000000-0000-0000-0000-000000000000"),
                409,
                failure(
                    409,
                    "Conflict",
                    'Operation cannot be fulfilled on trainingruntimes.nodus.dev "a": '
                    "Precondition failed: UID in precondition: "
                    "00000000-0000-0000-0000-000000000000, UID in object meta: {uid}",
                ),
            ),
        ),
    ),
    Sequence(
        "json-patch-replaces-with-a-passing-test",
        f"{REST} TestJSONPatch; RFC 6902",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                200,
                [
                    {"op": "test", "path": "/spec/task", "value": "SFT"},
                    {"op": "replace", "path": "/spec/task", "value": "DPO"},
                    {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
                ],
                JSON_PATCH,
                expect={"spec": {"task": "DPO"}, "metadata": {"labels": {"k": "v"}}},
            ),
        ),
    ),
    Sequence(
        "json-patch-with-a-failing-test-is-422-and-writes-nothing-naming-the-op-by-design",
        "apiserver pkg/endpoints/handlers/patch.go applyJSPatch (NewGenericServerResponse 422: "
        "kube's message is 'the server rejected our request due to an error in our request' "
        "with empty details, which kubectl prints as 'The request is invalid'; ours names the "
        "failed operation and has no details, so kubectl prints it: docs/kube-compatibility.md)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                422,
                [
                    {"op": "test", "path": "/spec/task", "value": "DPO"},
                    {"op": "replace", "path": "/spec/task", "value": "KTO"},
                ],
                JSON_PATCH,
                expect={
                    **failure(422, "Invalid", "testing value /spec/task failed: test failed"),
                    "details": ABSENT,
                },
            ),
            get("a", expect={"spec": {"task": "SFT"}, "metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "json-patch-removing-a-missing-path-is-422",
        "apiserver pkg/endpoints/handlers/patch.go applyJSPatch (Apply error)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                422,
                [{"op": "remove", "path": "/spec/nothing"}],
                JSON_PATCH,
                expect=failure(422, "Invalid"),
            ),
        ),
    ),
    Sequence(
        "json-patch-that-is-not-an-array-is-400",
        f"{REST} TestJSONPatch (jsonpatch.DecodePatch)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                400,
                {"op": "add"},
                JSON_PATCH,
                expect=failure(
                    400,
                    "BadRequest",
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                ),
            ),
        ),
    ),
    Sequence(
        "json-patch-over-10000-operations-is-413",
        "apiserver pkg/endpoints/handlers/patch.go maxJSONPatchOperations",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                413,
                [{"op": "test", "path": "/spec/task", "value": "SFT"}] * 10001,
                JSON_PATCH,
                expect=failure(
                    413,
                    "RequestEntityTooLarge",
                    contains("The allowed maximum operations in a JSON patch is 10000, got 10001"),
                ),
            ),
        ),
    ),
    Sequence(
        "strategic-merge-patch-is-415-for-custom-resources",
        f"{REST} TestPatchCustomResource; apiserver handlers/patch.go (patchTypes)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                415,
                {"spec": {"task": "DPO"}},
                STRATEGIC,
                expect=failure(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                ),
            ),
            get("a", expect={"spec": {"task": "SFT"}}),
        ),
    ),
    Sequence(
        "patch-with-force-is-422-unless-it-is-an-apply",
        "apimachinery pkg/apis/meta/v1/validation ValidatePatchOptions",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a?force=true",
                422,
                {"spec": {"task": "DPO"}},
                MERGE,
                expect=failure(
                    422,
                    "Invalid",
                    'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
                    "specified for non-apply patch",
                    {
                        "group": "meta.k8s.io",
                        "kind": "PatchOptions",
                        "causes": [
                            cause(
                                "FieldValueForbidden",
                                "force",
                                "Forbidden: may not be specified for non-apply patch",
                            )
                        ],
                    },
                ),
            ),
        ),
    ),
    Sequence(
        "field-manager-over-128-characters-is-422",
        "apimachinery pkg/apis/meta/v1/validation ValidateFieldManager (FieldManagerMaxLength)",
        (
            create("a"),
            merge(
                f"a?fieldManager={'m' * 129}",
                {"spec": {"task": "DPO"}},
                422,
                failure(
                    422, "Invalid", contains("fieldManager: Too long: may not be more than 128")
                ),
            ),
        ),
    ),
    Sequence(
        "field-manager-with-a-control-character-is-422",
        "apimachinery pkg/apis/meta/v1/validation ValidateFieldManager (unicode.IsPrint)",
        (
            create("a"),
            merge(
                "a?fieldManager=bad%09manager",
                {"spec": {"task": "DPO"}},
                422,
                failure(
                    422,
                    "Invalid",
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: '
                    '"bad\\tmanager": invalid character U+0009 (at position 3)',
                ),
            ),
        ),
    ),
    Sequence(
        "an-update-records-its-field-manager",
        "apiserver pkg/endpoints/handlers/create_test.go TestManagerOrUserAgent",
        (
            Step("POST", f"{TRS}?fieldManager=maker", 201, runtime("a")),
            merge(
                "a?fieldManager=editor",
                {"spec": {"task": "DPO"}},
                expect={
                    "metadata": {
                        # one entry per manager; their order is fieldmanager's sort
                        # (operation, time, manager), which depends on the clock here
                        "managedFields": all_of(
                            Length(2),
                            contains(
                                {
                                    "manager": "editor",
                                    "operation": "Update",
                                    "fieldsV1": {"f:spec": {"f:task": {}}},
                                },
                                {"manager": "maker", "operation": "Update"},
                            ),
                        )
                    }
                },
            ),
        ),
    ),
    Sequence(
        "the-field-manager-defaults-to-the-user-agent-prefix",
        "apiserver pkg/endpoints/handlers/create_test.go TestManagerOrUserAgent",
        (
            Step(
                "POST",
                TRS,
                201,
                runtime("a"),
                headers={"User-Agent": "kubectl/v1.35.0 (linux/amd64) kubernetes/abc"},
                expect={"metadata": {"managedFields": [{"manager": "kubectl"}]}},
            ),
        ),
    ),
    Sequence(
        "a-put-that-changes-nothing-keeps-managed-fields",
        f"{STORE} TestNoOpUpdates (managedFields unchanged)",
        (
            Step(
                "POST",
                f"{TRS}?fieldManager=maker",
                201,
                runtime("a"),
                save={"mf": "metadata.managedFields", "rv": "metadata.resourceVersion"},
            ),
            put("a?fieldManager=maker", current(), expect={"metadata": {"managedFields": "{mf}"}}),
        ),
    ),
    Sequence(
        "a-write-cannot-change-the-creation-timestamp-or-uid",
        f"{CONVENTIONS} Metadata (immutable system fields)",
        (
            Step(
                "POST",
                TRS,
                201,
                runtime("a"),
                save={"rv": "metadata.resourceVersion", "ts": "metadata.creationTimestamp"},
            ),
            put(
                "a",
                with_meta(current(task="DPO"), creationTimestamp="2001-01-01T00:00:00Z"),
                expect={"metadata": {"creationTimestamp": "{ts}"}},
            ),
        ),
    ),
    Sequence(
        "put-on-the-main-resource-ignores-status",
        f"{SUBRESOURCES} TestStatusSubresource (status ignored on the main resource)",
        (
            create("a"),
            put(
                "a",
                {
                    **current(task="DPO"),
                    "status": {"phase": "Ready", "imageDigest": "sha256:" + "1" * 64},
                },
                expect={"spec": {"task": "DPO"}, "status": {"imageDigest": ABSENT}},
            ),
        ),
    ),
    Sequence(
        "merge-patch-on-the-main-resource-ignores-status",
        f"{SUBRESOURCES} TestStatusSubresource",
        (
            create("a"),
            merge(
                "a",
                {"status": {"imageDigest": "sha256:" + "1" * 64}},
                expect={
                    "status": {"imageDigest": ABSENT},
                    "metadata": {"resourceVersion": same("rv")},
                },
            ),
        ),
    ),
    Sequence(
        "a-spec-only-put-replaces-the-whole-spec",
        f"{APISERVER} TestUpdate (replace semantics)",
        (
            Step(
                "POST",
                TRS,
                201,
                runtime("a", outputs=[{"name": "m", "path": "/out"}]),
                save={"rv": "metadata.resourceVersion"},
            ),
            put("a", current(), expect={"spec": {"outputs": ABSENT, "image": IMAGE}}),
        ),
    ),
    Sequence(
        "merge-patch-replaces-lists-whole",
        "RFC 7386 (arrays are replaced)",
        (
            create("a"),
            merge(
                "a",
                {"spec": {"command": ["python"]}},
                expect={"spec": {"command": ["python"]}},
            ),
        ),
    ),
    Sequence(
        "merge-patch-changing-the-name-is-400",
        "apiserver pkg/endpoints/handlers/patch.go (checkName after patching)",
        (
            create("a"),
            merge(
                "a",
                {"metadata": {"name": "b"}},
                400,
                failure(
                    400,
                    "BadRequest",
                    "the name of the object (b) does not match the name on the URL (a)",
                ),
            ),
        ),
    ),
    Sequence(
        "put-with-a-resource-version-from-the-future-is-409",
        "apiserver pkg/storage/etcd3/store.go GuaranteedUpdate (resourceVersion must match)",
        (
            create("a"),
            put(
                "a",
                current(rv="999999"),
                409,
                failure(409, "Conflict", MODIFIED, tr_details("a")),
            ),
        ),
    ),
    Sequence(
        "json-patch-testing-the-resource-version-guards-a-write",
        f"{REST} TestJSONPatch (test op as a precondition); api-conventions Concurrency Control",
        (
            create("a"),
            merge("a", {"metadata": {"labels": {"x": "y"}}}),
            Step(
                "PATCH",
                f"{TRS}/a",
                422,
                [
                    {"op": "test", "path": "/metadata/resourceVersion", "value": "{rv}"},
                    {"op": "replace", "path": "/spec/task", "value": "DPO"},
                ],
                JSON_PATCH,
                expect=failure(422, "Invalid"),
            ),
            get("a", expect={"spec": {"task": "SFT"}}),
        ),
    ),
    Sequence(
        "json-patch-adding-to-a-list-by-index",
        "RFC 6902 add (array index); apiserver handlers/patch.go",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                200,
                [{"op": "add", "path": "/spec/command/1", "value": "-u"}],
                JSON_PATCH,
                expect={"spec": {"command": ["python", "-u", "-m", "trainer"]}},
            ),
        ),
    ),
    Sequence(
        "json-patch-leaving-the-object-invalid-is-422",
        "apiextensions-apiserver test/integration/validation_test.go "
        "TestCustomResourceUpdateValidation",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                422,
                [{"op": "remove", "path": "/spec/image"}],
                JSON_PATCH,
                expect=invalid(
                    "a",
                    contains("spec.image: Required value"),
                    contains(cause("FieldValueRequired", "spec.image")),
                ),
            ),
        ),
    ),
    Sequence(
        "an-empty-merge-patch-writes-nothing",
        f"{STORE} TestNoOpUpdates (patch that changes nothing)",
        (
            create("a"),
            merge("a", {}, expect={"metadata": {"resourceVersion": same("rv"), "generation": 1}}),
        ),
    ),
    Sequence(
        "a-viewer-may-not-patch-403",
        "apiserver pkg/endpoints/filters/authorization.go",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                403,
                {"spec": {"task": "DPO"}},
                MERGE,
                who="bob",
                expect=failure(
                    403,
                    "Forbidden",
                    contains(
                        'trainingruntimes.nodus.dev "a" is forbidden: User "bob" cannot patch '
                        'resource "trainingruntimes" in API group "nodus.dev" in the namespace '
                        '"demo"'
                    ),
                    {"name": "a", "group": "nodus.dev", "kind": "trainingruntimes"},
                ),
            ),
        ),
    ),
    Sequence(
        "another-image-is-a-spec-change",
        f"{SUBRESOURCES} TestGeneration",
        (
            create("a"),
            merge("a", {"spec": {"image": OTHER_IMAGE}}, expect={"metadata": {"generation": 2}}),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
