"""The status subresource and dry runs."""

from __future__ import annotations

import re

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    DRYRUN,
    MERGE,
    TRS,
    Sequence,
    Step,
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
    ABSENT,
    TIME,
    Re,
    contains,
    later,
    same,
)

SUBRESOURCES = "apiextensions-apiserver test/integration/subresources_test.go"
CRD_HANDLER = (
    "apiextensions-apiserver pkg/apiserver/customresource_handler.go getOrCreateServingInfoFor"
)
# kube's update handler (transformDecodeError) before a strict decoding error.
STRICT = (
    'TrainingRuntime in version "v1beta1" cannot be handled as a TrainingRuntime: '
    "strict decoding error: "
)
DIGEST = "sha256:" + "1" * 64
STATUS = f"{TRS}/a/status"


def status_patch(
    body: object, status: int = 200, expect: object = None, query: str = "", **kw: object
) -> Step:
    """A merge patch of /status by root (a platform admin may write status, as the controller)."""
    return Step("PATCH", STATUS + query, status, body, MERGE, who="root", expect=expect, **kw)  # type: ignore[arg-type]


SEQUENCES = [
    Sequence(
        "status-get-answers-the-whole-object",
        f"{SUBRESOURCES} TestStatusSubresource; basic_test.go TestStatusGetAndPatch",
        (
            create("a"),
            Step(
                "GET",
                STATUS,
                200,
                expect={
                    "kind": "TrainingRuntime",
                    "metadata": {"name": "a"},
                    "spec": {"task": "SFT"},
                },
            ),
        ),
    ),
    Sequence(
        "status-patch-writes-status-and-keeps-the-generation",
        f"{SUBRESOURCES} TestStatusSubresource, TestGeneration",
        (
            create("a"),
            status_patch(
                {"status": {"imageDigest": DIGEST}},
                expect={
                    "status": {"imageDigest": DIGEST},
                    "metadata": {"generation": 1, "resourceVersion": later("rv")},
                },
            ),
            get("a", expect={"status": {"imageDigest": DIGEST}}),
        ),
    ),
    Sequence(
        "status-patch-ignores-spec-changes",
        f"{SUBRESOURCES} TestStatusSubresource (spec changes through /status are ignored)",
        (
            create("a"),
            status_patch(
                {"spec": {"task": "DPO"}, "status": {"imageDigest": DIGEST}},
                expect={"spec": {"task": "SFT"}, "metadata": {"generation": 1}},
            ),
        ),
    ),
    Sequence(
        "status-patch-ignores-metadata-changes-of-custom-resources",
        "apiextensions-apiserver pkg/registry/customresource/status_strategy.go PrepareForUpdate "
        "(copies the old object, keeps only status)",
        (
            create("a"),
            status_patch(
                {"metadata": {"labels": {"via": "status"}}, "status": {"imageDigest": DIGEST}},
                expect={"metadata": {"labels": ABSENT}, "status": {"imageDigest": DIGEST}},
            ),
        ),
    ),
    Sequence(
        "status-put-replaces-status-and-ignores-spec",
        f"{SUBRESOURCES} TestStatusSubresource (UpdateStatus)",
        (
            create("a"),
            Step(
                "PUT",
                STATUS,
                200,
                {
                    **with_meta(runtime("a", task="KTO"), resourceVersion="{rv}"),
                    "status": {"imageDigest": DIGEST},
                },
                who="root",
                expect={"spec": {"task": "SFT"}, "status": {"imageDigest": DIGEST}},
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-on-a-status-put-is-400",
        f"{CRD_HANDLER} (the status scope is a shallow copy of the main one: the same strict "
        "decoder for the whole body); handlers/update.go transformDecodeError",
        (
            create("a"),
            Step(
                "PUT",
                f"{STATUS}?fieldValidation=Strict",
                400,
                {
                    **with_meta(runtime("a", foo=1), resourceVersion="{rv}"),
                    "status": {"imageDigest": DIGEST, "colour": "red"},
                },
                who="root",
                expect=failure(
                    400,
                    "BadRequest",
                    Re(
                        re.escape(STRICT) + r'unknown field "(spec\.foo|status\.colour)", '
                        r'unknown field "(spec\.foo|status\.colour)"'
                    ),
                ),
            ),
            get("a", expect={"status": {"imageDigest": ABSENT}}),
        ),
    ),
    Sequence(
        "strict-field-validation-on-a-status-patch-is-422-about-the-patch",
        f"{CRD_HANDLER}; handlers/patch.go applyPatchToCurrentObject (strict error: NewInvalid "
        "at patch)",
        (
            create("a"),
            status_patch(
                {"status": {"imageDigest": DIGEST, "colour": "red"}},
                422,
                failure(
                    422,
                    "Invalid",
                    Re(
                        r' "" is invalid: patch: Invalid value: "\{.*\}": strict decoding error: '
                        r'unknown field "status\.colour"'
                    ),
                ),
                query="?fieldValidation=Strict",
            ),
            get("a", expect={"metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "an-unknown-status-field-is-dropped-with-a-warning",
        f"{CRD_HANDLER} (fieldValidation defaults to Warn on every scope)",
        (
            create("a"),
            status_patch(
                {"status": {"imageDigest": DIGEST, "colour": "red"}},
                expect={"status": {"imageDigest": DIGEST, "colour": ABSENT}},
                expect_headers={"warning": '299 - "unknown field \\"status.colour\\""'},
            ),
            get("a", expect={"status": {"imageDigest": DIGEST, "colour": ABSENT}}),
        ),
    ),
    Sequence(
        "status-put-with-a-stale-resource-version-is-409",
        f"{SUBRESOURCES} TestStatusSubresource; api-conventions Concurrency Control",
        (
            create("a"),
            merge("a", {"spec": {"task": "DPO"}}),
            Step(
                "PUT",
                STATUS,
                409,
                {
                    **with_meta(runtime("a"), resourceVersion="{rv}"),
                    "status": {"imageDigest": DIGEST},
                },
                who="root",
                expect=failure(
                    409,
                    "Conflict",
                    'Operation cannot be fulfilled on trainingruntimes.nodus.dev "a": the object '
                    "has been modified; please apply your changes to the latest version and try "
                    "again",
                    tr_details("a"),
                ),
            ),
        ),
    ),
    Sequence(
        "status-of-a-missing-object-is-404",
        f"{SUBRESOURCES} TestStatusSubresource",
        (
            status_patch(
                {"status": {"imageDigest": DIGEST}},
                404,
                failure(
                    404, "NotFound", 'trainingruntimes.nodus.dev "a" not found', tr_details("a")
                ),
            ),
        ),
    ),
    Sequence(
        "status-writes-record-the-status-subresource-in-managed-fields",
        "kubernetes test/integration/apiserver/apply/status_test.go; api-conventions managedFields",
        (
            create("a"),
            Step(
                "PATCH",
                f"{STATUS}?fieldManager=ctl",
                200,
                {"status": {"imageDigest": DIGEST}},
                MERGE,
                who="root",
                expect={
                    "metadata": {
                        "managedFields": contains(
                            {
                                "manager": "ctl",
                                "operation": "Update",
                                "subresource": "status",
                                "fieldsV1": {"f:status": {"f:imageDigest": {}}},
                            }
                        )
                    }
                },
            ),
        ),
    ),
    Sequence(
        "a-caller-without-status-permission-is-403",
        "apiserver pkg/endpoints/filters/authorization.go (subresource in the Forbidden message)",
        (
            create("a"),
            Step(
                "PATCH",
                STATUS,
                403,
                {"status": {"imageDigest": DIGEST}},
                MERGE,
                expect=failure(
                    403,
                    "Forbidden",
                    contains(
                        'trainingruntimes.nodus.dev "a" is forbidden: User "alice" cannot patch '
                        'resource "trainingruntimes/status" in API group "nodus.dev" in the '
                        'namespace "demo"'
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "status-put-naming-another-object-is-400",
        f"{SUBRESOURCES} TestStatusSubresource; apiserver handlers/rest.go checkName",
        (
            create("a"),
            Step(
                "PUT",
                STATUS,
                400,
                {
                    **with_meta(runtime("b"), resourceVersion="{rv}"),
                    "status": {"imageDigest": DIGEST},
                },
                who="root",
                expect=failure(
                    400,
                    "BadRequest",
                    "the name of the object (b) does not match the name on the URL (a)",
                ),
            ),
        ),
    ),
    Sequence(
        "status-json-patch",
        "kubernetes test/integration/apiserver/patch_test.go; "
        "subresources_test.go TestSubresourcePatch",
        (
            create("a"),
            Step(
                "PATCH",
                STATUS,
                200,
                [{"op": "add", "path": "/status/imageDigest", "value": DIGEST}],
                "application/json-patch+json",
                who="root",
                expect={"status": {"imageDigest": DIGEST}, "metadata": {"generation": 1}},
            ),
        ),
    ),
    Sequence(
        "status-patch-with-a-stale-resource-version-is-409",
        f"{SUBRESOURCES} TestSubresourcePatch (resourceVersion in the patch)",
        (
            create("a"),
            merge("a", {"metadata": {"labels": {"x": "y"}}}),
            status_patch(
                {"metadata": {"resourceVersion": "{rv}"}, "status": {"imageDigest": DIGEST}},
                409,
                failure(409, "Conflict", contains("the object has been modified")),
            ),
        ),
    ),
    Sequence(
        "status-writes-do-not-change-spec-or-generation-even-when-invalid-spec-is-sent",
        f"{SUBRESOURCES} TestValidateOnlyStatus",
        (
            create("a"),
            status_patch(
                {"spec": {"task": "Nope"}, "status": {"imageDigest": DIGEST}},
                expect={"spec": {"task": "SFT"}, "status": {"imageDigest": DIGEST}},
            ),
        ),
    ),
    Sequence(
        "an-invalid-status-is-422",
        f"{SUBRESOURCES} TestValidateOnlyStatus (status validated against the schema)",
        (
            create("a"),
            status_patch(
                {"status": {"phase": "Sideways"}},
                422,
                failure(422, "Invalid", contains('status.phase: Unsupported value: "Sideways"')),
            ),
        ),
    ),
    Sequence(
        "dry-run-create-answers-the-object-and-stores-nothing",
        f"{DRYRUN} DryRunCreateTest",
        (
            Step(
                "POST",
                f"{TRS}?dryRun=All",
                201,
                runtime("a"),
                expect={
                    "metadata": {
                        "name": "a",
                        "creationTimestamp": TIME,
                        "generation": 1,
                        "resourceVersion": ABSENT,
                    }
                },
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "dry-run-create-still-validates",
        f"{DRYRUN} DryRunCreateTest (invalid object)",
        (
            Step(
                "POST",
                f"{TRS}?dryRun=All",
                422,
                runtime("a", task="Nope"),
                expect=failure(422, "Invalid", contains("spec.task: Unsupported value")),
            ),
        ),
    ),
    Sequence(
        "dry-run-create-of-an-existing-name-is-409",
        f"{DRYRUN} DryRunCreateTest (already exists)",
        (
            create("a"),
            Step(
                "POST",
                f"{TRS}?dryRun=All",
                409,
                runtime("a"),
                expect=failure(
                    409, "AlreadyExists", 'trainingruntimes.nodus.dev "a" already exists'
                ),
            ),
        ),
    ),
    Sequence(
        "dry-run-patch-answers-the-result-and-stores-nothing",
        f"{DRYRUN} DryRunPatchTest",
        (
            create("a"),
            merge(
                "a?dryRun=All",
                {"spec": {"task": "DPO"}},
                expect={"spec": {"task": "DPO"}, "metadata": {"generation": 2}},
            ),
            get(
                "a",
                expect={
                    "spec": {"task": "SFT"},
                    "metadata": {"resourceVersion": same("rv"), "generation": 1},
                },
            ),
        ),
    ),
    Sequence(
        "dry-run-update-answers-the-result-and-stores-nothing",
        f"{DRYRUN} DryRunUpdateTest",
        (
            create("a"),
            Step(
                "PUT",
                f"{TRS}/a?dryRun=All",
                200,
                with_meta(runtime("a", task="DPO"), resourceVersion="{rv}"),
                expect={"spec": {"task": "DPO"}},
            ),
            get("a", expect={"spec": {"task": "SFT"}}),
        ),
    ),
    Sequence(
        "dry-run-delete-keeps-the-object",
        f"{DRYRUN} DryRunDeleteTest",
        (
            create("a"),
            delete("a?dryRun=All", expect={"status": "Success"}),
            get("a", expect={"metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "dry-run-delete-of-a-held-object-does-not-mark-it",
        f"{DRYRUN} DryRunDeleteTest (finalizers)",
        (
            held(),
            delete("a?dryRun=All", expect={"metadata": {"deletionTimestamp": TIME}}),
            get("a", expect={"metadata": {"deletionTimestamp": ABSENT}}),
        ),
    ),
    Sequence(
        "dry-run-status-patch-stores-nothing",
        f"{DRYRUN} DryRunPatchTest (status subresource)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{STATUS}?dryRun=All",
                200,
                {"status": {"imageDigest": DIGEST}},
                MERGE,
                who="root",
                expect={"status": {"imageDigest": DIGEST}},
            ),
            get("a", expect={"status": {"imageDigest": ABSENT}}),
        ),
    ),
    Sequence(
        "an-unknown-dry-run-value-is-422",
        "apimachinery pkg/apis/meta/v1/validation ValidateDryRun; handlers/create.go",
        (
            Step(
                "POST",
                f"{TRS}?dryRun=Some",
                422,
                runtime("a"),
                expect=failure(
                    422,
                    "Invalid",
                    'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                    '[]string{"Some"}: supported values: "All"',
                    {"group": "meta.k8s.io", "kind": "CreateOptions"},
                ),
            ),
            gone("a"),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
