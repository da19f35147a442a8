"""Status details: for each kind of error, the `details` kube-apiserver writes, exactly.

apimachinery's `pkg/api/errors` builds them: an error about one object names its resource (the
plural), its group and its name (NotFound, AlreadyExists, Conflict, Forbidden); Invalid names
the Kind instead; a verb a resource does not serve names the resource and group only
(NewMethodNotSupported); kube's router answers an unknown path or method with empty details
(NewGenericServerResponse); the rest carry none. Every field of StatusDetails is `omitempty`.
"""

from __future__ import annotations

import pytest

from runtimes.registry import seeding
from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    ACCS,
    APPLY,
    MERGE,
    STRATEGIC,
    TRS,
    Sequence,
    Step,
    create,
    failure,
    merge,
    params,
    run,
    runtime,
    tr_details,
    with_meta,
)
from tests.conformance.patterns import ABSENT, ANY, Exactly, Re, contains

ERRORS = "apimachinery pkg/api/errors/errors.go"
CRD_HANDLER = "apiextensions-apiserver pkg/apiserver/customresource_handler.go"
GENERIC = "apiserver pkg/server/handler.go (NewGenericServerResponse for what no route serves)"
NO_DETAILS = ABSENT  # the Status has no `details` at all


def no_details(code: int, reason: str, message: object = ANY) -> dict[str, object]:
    return failure(code, reason, message, NO_DETAILS)


SEQUENCES = [
    Sequence(
        "not-found-names-the-resource-group-and-object",
        f"{ERRORS} NewNotFound",
        (
            Step(
                "GET",
                f"{TRS}/ghost",
                404,
                expect=failure(
                    404,
                    "NotFound",
                    'trainingruntimes.nodus.dev "ghost" not found',
                    Exactly(tr_details("ghost")),
                ),
            ),
        ),
    ),
    Sequence(
        "already-exists-names-the-resource-group-and-object",
        f"{ERRORS} NewAlreadyExists",
        (
            create("a"),
            Step(
                "POST",
                TRS,
                409,
                runtime("a"),
                expect=failure(409, "AlreadyExists", ANY, Exactly(tr_details("a"))),
            ),
        ),
    ),
    Sequence(
        "conflict-names-the-resource-group-and-object",
        f"{ERRORS} NewConflict",
        (
            create("a"),
            merge("a", {"metadata": {"labels": {"x": "y"}}}),
            Step(
                "PUT",
                f"{TRS}/a",
                409,
                with_meta(runtime("a"), resourceVersion="{rv}"),
                expect=failure(409, "Conflict", ANY, Exactly(tr_details("a"))),
            ),
        ),
    ),
    Sequence(
        "an-apply-conflict-holds-only-its-causes",
        f"{ERRORS} NewApplyConflict",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a?fieldManager=other",
                409,
                runtime("a", task="DPO"),
                APPLY,
                expect=failure(
                    409,
                    "Conflict",
                    ANY,
                    {"causes": ANY, "name": ABSENT, "group": ABSENT, "kind": ABSENT},
                ),
            ),
        ),
    ),
    Sequence(
        "invalid-names-the-kind-not-the-resource",
        f"{ERRORS} NewInvalid (qualifiedKind); apiserver pkg/registry/rest/create.go",
        (
            Step(
                "POST",
                TRS,
                422,
                runtime("a", task="Nope"),
                expect=failure(
                    422,
                    "Invalid",
                    ANY,
                    {
                        "name": "a",
                        "group": "nodus.dev",
                        "kind": "TrainingRuntime",
                        "causes": ANY,
                        "uid": ABSENT,
                        "retryAfterSeconds": ABSENT,
                    },
                ),
            ),
        ),
    ),
    Sequence(
        "invalid-list-options-have-no-name",
        'apiserver pkg/endpoints/handlers/get.go ListResource (NewInvalid ListOptions, name "")',
        (
            Step(
                "GET",
                f"{TRS}?resourceVersionMatch=Exact",
                422,
                expect=failure(
                    422,
                    "Invalid",
                    ANY,
                    {
                        "name": ABSENT,
                        "group": "meta.k8s.io",
                        "kind": "ListOptions",
                        "causes": [
                            {
                                "reason": "FieldValueForbidden",
                                "field": "resourceVersionMatch",
                                "message": ANY,
                            }
                        ],
                    },
                ),
            ),
        ),
    ),
    Sequence(
        "forbidden-names-the-resource-and-the-object-when-there-is-one",
        "apiserver pkg/endpoints/handlers/responsewriters/errors.go ForbiddenStatusError; "
        f"{ERRORS} NewForbidden (an empty name is omitted)",
        (
            create("a"),
            Step(
                "POST",
                TRS,
                403,
                runtime("b"),
                who="bob",
                expect=failure(
                    403,
                    "Forbidden",
                    contains(
                        'trainingruntimes.nodus.dev is forbidden: User "bob" cannot create '
                        'resource "trainingruntimes" in API group "nodus.dev" in the namespace '
                        '"demo"'
                    ),
                    Exactly({"group": "nodus.dev", "kind": "trainingruntimes"}),
                ),
            ),
            Step(
                "DELETE",
                f"{TRS}/a",
                403,
                who="bob",
                expect=failure(403, "Forbidden", ANY, Exactly(tr_details("a"))),
            ),
            Step(
                "PATCH",
                f"{TRS}/a/status",
                403,
                {"status": {}},
                MERGE,
                expect=failure(403, "Forbidden", ANY, Exactly(tr_details("a"))),
            ),
        ),
    ),
    Sequence(
        "a-verb-a-subresource-does-not-serve-names-the-resource",
        f"{CRD_HANDLER} serveStatus (NewMethodNotSupported with requestInfo.Resource)",
        (
            create("a"),
            Step(
                "DELETE",
                f"{TRS}/a/status",
                405,
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    'delete is not supported on resources of kind "trainingruntimes.nodus.dev"',
                    Exactly({"group": "nodus.dev", "kind": "trainingruntimes"}),
                ),
            ),
            Step(
                "POST",
                f"{TRS}/a/status",
                405,
                runtime("a"),
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    'create is not supported on resources of kind "trainingruntimes.nodus.dev"',
                    Exactly({"group": "nodus.dev", "kind": "trainingruntimes"}),
                ),
            ),
        ),
    ),
    Sequence(
        "an-unknown-subresource-names-the-object",
        f"{CRD_HANDLER} ServeHTTP (a subresource other than status and scale: NewNotFound)",
        (
            create("a"),
            *(
                Step(
                    method,
                    f"{TRS}/a/nothing",
                    404,
                    body,
                    expect=failure(
                        404,
                        "NotFound",
                        'trainingruntimes.nodus.dev "a" not found',
                        Exactly(tr_details("a")),
                    ),
                )
                for method, body in (("GET", None), ("PUT", runtime("a")), ("DELETE", None))
            ),
        ),
    ),
    Sequence(
        "status-of-a-kind-without-the-subresource-names-the-object",
        f"{CRD_HANDLER} ServeHTTP (status without a status subresource: NewNotFound)",
        (
            Step(
                "GET",
                f"{ACCS}/h100-80g-sxm/status",
                404,
                expect=failure(
                    404,
                    "NotFound",
                    'accelerators.nodus.dev "h100-80g-sxm" not found',
                    Exactly({"name": "h100-80g-sxm", "group": "nodus.dev", "kind": "accelerators"}),
                ),
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "a-write-to-the-read-only-catalog-names-the-resource",
        f"{ERRORS} NewMethodNotSupported (docs/kube-compatibility.md: the catalog is read-only)",
        (
            Step(
                "PATCH",
                f"{ACCS}/h100-80g-sxm",
                405,
                {"metadata": {"labels": {"a": "b"}}},
                MERGE,
                who="root",
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    'patch is not supported on resources of kind "accelerators.nodus.dev"',
                    Exactly({"group": "nodus.dev", "kind": "accelerators"}),
                ),
            ),
        ),
        accelerators=True,
    ),
    Sequence(
        "an-unknown-resource-is-the-generic-404-with-empty-details",
        GENERIC,
        (
            Step(
                "GET",
                "/api/v1/nothings",
                404,
                expect=failure(
                    404, "NotFound", "the server could not find the requested resource", Exactly({})
                ),
            ),
        ),
    ),
    Sequence(
        "a-method-no-route-serves-is-the-generic-405-with-empty-details",
        f"{GENERIC}; docs/kube-compatibility.md (namespaces are read-only)",
        (
            Step(
                "DELETE",
                "/api/v1/namespaces/demo",
                405,
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    Exactly({}),
                ),
            ),
        ),
    ),
    Sequence(
        "a-resource-version-from-the-future-is-a-timeout-with-its-cause",
        "apiserver pkg/storage/errors.go NewTooLargeResourceVersionError; "
        f"{ERRORS} NewTimeoutError (the message starts `Timeout: `)",
        (
            Step(
                "GET",
                f"{TRS}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan",
                504,
                expect=failure(
                    504,
                    "Timeout",
                    Re(r"Timeout: Too large resource version: 999999999, current: \d+"),
                    Exactly(
                        {
                            "causes": [
                                {
                                    "reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version",
                                }
                            ],
                            "retryAfterSeconds": 1,
                        }
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "bad-request-unauthorized-406-and-415-carry-no-details",
        f"{ERRORS} NewBadRequest, NewUnauthorized; apimachinery runtime negotiation errors",
        (
            create("a"),
            Step("GET", f"{TRS}?resourceVersion=abc", 400, expect=no_details(400, "BadRequest")),
            Step("GET", TRS, 401, who="anonymous", expect=no_details(401, "Unauthorized")),
            Step(
                "GET",
                f"{TRS}/a",
                406,
                headers={"Accept": "application/vnd.kubernetes.protobuf"},
                expect=no_details(406, "NotAcceptable"),
            ),
            Step(
                "PATCH",
                f"{TRS}/a",
                415,
                {"metadata": {"labels": {"x": "y"}}},
                STRATEGIC,
                expect=no_details(415, "UnsupportedMediaType"),
            ),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    if sequence.accelerators:
        seeding.seed_accelerators()
    run(sequence, in_process)
