"""Server-side apply on a custom resource: create, ownership, conflicts, force, managedFields."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    APPLY,
    IMAGE,
    TRS,
    Sequence,
    Step,
    failure,
    get,
    gone,
    merge,
    params,
    run,
    runtime,
    with_meta,
)
from tests.conformance.patterns import (
    ABSENT,
    TIME,
    Exactly,
    contains,
    later,
    same,
)

APPLY_CRD = "kubernetes test/integration/apiserver/apply/apply_crd_test.go"
APPLY_TEST = "kubernetes test/integration/apiserver/apply/apply_test.go"
APPLY_BASIC = "apiextensions-apiserver test/integration/apply_test.go TestApplyBasic"
CONFLICT = "apimachinery pkg/util/managedfields/internal/conflict.go"
STATUS_TEST = "kubernetes test/integration/apiserver/apply/status_test.go"
OTHER_IMAGE = "registry.nodus.dev/trainers/sft:2.0@sha256:" + "cd" * 32


def apply(
    name: str,
    body: object,
    manager: str = "me",
    status: int = 200,
    expect: object = None,
    query: str = "",
    **kw: object,
) -> Step:
    return Step(
        "PATCH",
        f"{TRS}/{name}?fieldManager={manager}{query}",
        status,
        body,
        APPLY,
        expect=expect,
        **kw,  # type: ignore[arg-type]
    )


def config(name: str = "a", **spec: object) -> dict:
    """An apply configuration: only what the applier owns."""
    return with_meta(runtime(name, **spec), labels={"app": "t"})


SEQUENCES = [
    Sequence(
        "apply-creates-an-absent-object-with-201",
        f"{APPLY_CRD} TestApplyCRDNoSchema; {APPLY_BASIC}",
        (
            apply(
                "a",
                config(),
                status=201,
                expect={
                    "metadata": {
                        "generation": 1,
                        "managedFields": [
                            {
                                "manager": "me",
                                "operation": "Apply",
                                "apiVersion": "nodus.dev/v1beta1",
                                "time": TIME,
                                "fieldsType": "FieldsV1",
                                "fieldsV1": {
                                    "f:metadata": {"f:labels": {"f:app": {}}},
                                    "f:spec": {"f:image": {}, "f:task": {}, "f:command": {}},
                                },
                            }
                        ],
                    }
                },
                save={"rv": "metadata.resourceVersion"},
            ),
            get("a", expect={"metadata": {"resourceVersion": "{rv}"}}),
        ),
    ),
    Sequence(
        "apply-requires-a-field-manager",
        "apimachinery pkg/apis/meta/v1/validation ValidatePatchOptions",
        (
            Step(
                "PATCH",
                f"{TRS}/a",
                422,
                config(),
                APPLY,
                expect=failure(
                    422,
                    "Invalid",
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                    "required for apply patch",
                    {"group": "meta.k8s.io", "kind": "PatchOptions"},
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "apply-of-the-same-configuration-twice-writes-nothing",
        f"{APPLY_TEST} TestNoOpApplyWithEmptyMap (no-op apply keeps resourceVersion)",
        (
            apply("a", config(), status=201, save={"rv": "metadata.resourceVersion"}),
            apply("a", config(), expect={"metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "apply-changing-a-field-it-owns-updates-it",
        f"{APPLY_BASIC} (reapply with a change)",
        (
            apply("a", config(), status=201, save={"rv": "metadata.resourceVersion"}),
            apply(
                "a",
                config(task="DPO"),
                expect={
                    "spec": {"task": "DPO"},
                    "metadata": {"generation": 2, "resourceVersion": later("rv")},
                },
            ),
        ),
    ),
    Sequence(
        "apply-dropping-a-field-it-owned-removes-it",
        f"{APPLY_TEST} TestApplyRemovesEmptyManagedFields / field removal",
        (
            apply("a", with_meta(config(), labels={"app": "t", "tier": "gold"}), status=201),
            apply("a", config(), expect={"metadata": {"labels": Exactly({"app": "t"})}}),
        ),
    ),
    Sequence(
        "apply-conflicting-with-an-update-manager-is-409-with-causes",
        f"{CONFLICT} NewConflictError; {APPLY_TEST} TestApplyUpdateApplyConflictForced",
        (
            apply("a", config(), status=201),
            merge(
                "a?fieldManager=other",
                {"spec": {"image": OTHER_IMAGE}},
                save={"rv": "metadata.resourceVersion"},
            ),
            apply(
                "a",
                config(),
                status=409,
                expect=failure(
                    409,
                    "Conflict",
                    'Apply failed with 1 conflict: conflict with "other" using nodus.dev/v1beta1: '
                    ".spec.image",
                    Exactly(
                        {
                            "causes": [
                                {
                                    "reason": "FieldManagerConflict",
                                    "message": 'conflict with "other" using nodus.dev/v1beta1',
                                    "field": ".spec.image",
                                }
                            ]
                        }
                    ),
                ),
            ),
            get(
                "a",
                expect={
                    "spec": {"image": OTHER_IMAGE},
                    "metadata": {"resourceVersion": same("rv")},
                },
            ),
        ),
    ),
    Sequence(
        "apply-conflicting-with-another-applier-names-it-without-a-version",
        f"{CONFLICT} printManager (Apply managers print without 'using')",
        (
            apply("a", config(), status=201),
            apply(
                "a",
                config(image=OTHER_IMAGE),
                manager="other",
                status=409,
                expect=failure(
                    409,
                    "Conflict",
                    'Apply failed with 1 conflict: conflict with "me": .spec.image',
                ),
            ),
        ),
    ),
    Sequence(
        "apply-with-several-conflicts-lists-them-by-manager",
        f"{CONFLICT} getConflictMessage (several conflicts)",
        (
            apply("a", config(), status=201),
            apply(
                "a",
                config(image=OTHER_IMAGE, task="DPO"),
                manager="other",
                status=409,
                expect=failure(
                    409,
                    "Conflict",
                    contains('Apply failed with 2 conflicts: conflicts with "me":\n- .spec.'),
                    {"causes": contains({"field": ".spec.image"}, {"field": ".spec.task"})},
                ),
            ),
        ),
    ),
    Sequence(
        "force-takes-ownership-from-the-other-manager",
        f"{APPLY_TEST} TestApplyUpdateApplyConflictForced",
        (
            apply("a", config(), status=201),
            merge("a?fieldManager=other", {"spec": {"image": OTHER_IMAGE}}),
            apply(
                "a",
                config(),
                query="&force=true",
                expect={
                    "spec": {"image": IMAGE},
                    "metadata": {"managedFields": [{"manager": "me", "operation": "Apply"}]},
                },
            ),
        ),
    ),
    Sequence(
        "the-same-value-applied-by-two-managers-is-shared",
        f"{APPLY_TEST} TestApplyManagedFields (shared ownership without conflict)",
        (
            apply("a", config(), status=201),
            apply(
                "a",
                config(),
                manager="other",
                expect={
                    "metadata": {
                        "managedFields": contains(
                            {
                                "manager": "me",
                                "operation": "Apply",
                                "fieldsV1": {"f:spec": {"f:image": {}}},
                            },
                            {
                                "manager": "other",
                                "operation": "Apply",
                                "fieldsV1": {"f:spec": {"f:image": {}}},
                            },
                        )
                    }
                },
            ),
        ),
    ),
    Sequence(
        "apply-with-dry-run-stores-nothing",
        f"{APPLY_TEST} (dryRun); kubernetes test/integration/dryrun/dryrun_test.go",
        (
            apply(
                "a",
                config(),
                status=201,
                query="&dryRun=All",
                expect={"metadata": {"resourceVersion": ABSENT}},
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "apply-of-yaml",
        f"{APPLY_CRD} (YAML apply bodies)",
        (
            apply(
                "a",
                "apiVersion: nodus.dev/v1beta1\nkind: TrainingRuntime\nmetadata:\n  name: a\n"
                f'spec:\n  image: "{IMAGE}"\n  task: SFT\n  command: [python]\n'
                "  requires: {data: true}\n",
                status=201,
                expect={"spec": {"command": ["python"]}},
            ),
        ),
    ),
    Sequence(
        "apply-to-the-status-subresource-owns-status-only",
        f"{STATUS_TEST} TestApplyStatus",
        (
            apply("a", config(), status=201),
            Step(
                "PATCH",
                f"{TRS}/a/status?fieldManager=ctl",
                200,
                {
                    "apiVersion": "nodus.dev/v1beta1",
                    "kind": "TrainingRuntime",
                    "metadata": {"name": "a"},
                    "status": {"imageDigest": "sha256:" + "1" * 64},
                },
                APPLY,
                who="root",
                expect={
                    "status": {"imageDigest": "sha256:" + "1" * 64},
                    "metadata": {
                        "managedFields": contains(
                            {
                                "manager": "ctl",
                                "operation": "Apply",
                                "subresource": "status",
                                "fieldsV1": {"f:status": {"f:imageDigest": {}}},
                            }
                        )
                    },
                },
            ),
        ),
    ),
    Sequence(
        "apply-naming-another-object-is-400",
        "apiserver pkg/endpoints/handlers/patch.go (checkName after applying)",
        (
            apply(
                "a",
                config("b"),
                status=400,
                expect=failure(
                    400,
                    "BadRequest",
                    "the name of the object (b) does not match the name on the URL (a)",
                ),
            ),
        ),
    ),
    Sequence(
        "apply-of-an-invalid-object-is-422",
        f"{APPLY_CRD} (schema validation on apply)",
        (
            apply(
                "a",
                config(task="Nope"),
                status=422,
                expect=failure(422, "Invalid", contains("spec.task: Unsupported value")),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "force-on-apply-with-no-conflict-is-fine",
        f"{APPLY_TEST} (force=true without conflicts)",
        (apply("a", config(), status=201, query="&force=true"),),
    ),
    Sequence(
        "an-update-after-apply-splits-ownership",
        f"{APPLY_TEST} TestApplyUpdateApplyConflictForced (update takes the field it changes)",
        (
            apply("a", config(), status=201),
            merge(
                "a?fieldManager=editor",
                {"spec": {"task": "DPO"}},
                expect={
                    "metadata": {
                        "managedFields": contains(
                            {
                                "manager": "me",
                                "operation": "Apply",
                                "fieldsV1": {"f:spec": {"f:task": ABSENT}},
                            },
                            {
                                "manager": "editor",
                                "operation": "Update",
                                "fieldsV1": {"f:spec": {"f:task": {}}},
                            },
                        )
                    }
                },
            ),
        ),
    ),
    Sequence(
        "a-client-cannot-write-managed-fields-that-do-not-parse",
        "kubernetes test/integration/apiserver/apply/apply_test.go TestApplyInvalidManagedFields / "
        "invalid_managedFields_test.go",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), managedFields=[{"manager": "x", "operation": "Bogus"}]),
                expect={"metadata": {"managedFields": contains({"operation": "Update"})}},
            ),
        ),
    ),
    Sequence(
        "clearing-managed-fields-with-an-empty-list-resets-them",
        "kubernetes test/integration/apiserver/apply/apply_test.go "
        "TestClearManagedFieldsWithUpdateEmptyList",
        (
            apply("a", config(), status=201),
            merge(
                "a",
                {"metadata": {"managedFields": [{}]}},
                expect={"metadata": {"managedFields": ABSENT}},
            ),
        ),
    ),
    Sequence(
        "apply-of-a-list-map-merges-by-key",
        "kubernetes test/integration/apiserver/apply/apply_crd_test.go "
        "TestApplyCRDStructuralSchemaWithDefaulting "
        "(x-kubernetes-list-type: map)",
        (
            apply("a", config(outputs=[{"name": "model", "path": "/out/model"}]), status=201),
            apply(
                "a",
                {
                    "apiVersion": "nodus.dev/v1beta1",
                    "kind": "TrainingRuntime",
                    "metadata": {"name": "a"},
                    "spec": {"outputs": [{"name": "logs", "path": "/out/logs"}]},
                },
                manager="other",
                expect={"spec": {"outputs": [{"name": "model"}, {"name": "logs"}]}},
            ),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
