"""Create, get, list and metadata of a namespaced custom resource (TrainingRuntime)."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    GV,
    MERGE,
    TRS,
    Sequence,
    Step,
    cause,
    create,
    failure,
    get,
    gone,
    invalid,
    params,
    run,
    runtime,
    tr_details,
    with_meta,
)
from tests.conformance.patterns import (
    ABSENT,
    ANY,
    RV,
    TIME,
    UID,
    Re,
    contains,
    same,
)

BASIC = "apiextensions-apiserver test/integration/basic_test.go"
OBJECTMETA = "apiextensions-apiserver test/integration/objectmeta_test.go"
APISERVER = "apiserver pkg/endpoints/apiserver_test.go"
STORE = "apiserver pkg/registry/generic/registry/store_test.go"
CRD_HANDLER = "apiextensions-apiserver pkg/apiserver/customresource_handler.go ServeHTTP"
CLUSTER_TRS = f"{GV}/trainingruntimes"
CONVENTIONS = "community contributors/devel/sig-architecture/api-conventions.md"
OBJECTMETA_COERCE = "apiextensions-apiserver pkg/apiserver/schema/objectmeta/coerce.go"
HANDLERS = "apiserver pkg/endpoints/handlers/rest.go transformDecodeError"
CANNOT = 'TrainingRuntime in version "v1beta1" cannot be handled as a TrainingRuntime: '

NAME_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

SEQUENCES = [
    Sequence(
        "create-answers-201-with-server-set-metadata",
        f"{BASIC} TestNamespaceScopedCRUD; {CONVENTIONS} Metadata",
        (
            Step(
                "POST",
                f"{TRS}?fieldManager=conf",
                201,
                runtime("a"),
                expect={
                    "apiVersion": "nodus.dev/v1beta1",
                    "kind": "TrainingRuntime",
                    "metadata": {
                        "name": "a",
                        "namespace": "demo",
                        "uid": UID,
                        "resourceVersion": RV,
                        "generation": 1,
                        "creationTimestamp": TIME,
                        "deletionTimestamp": ABSENT,
                        "managedFields": [
                            {
                                "manager": "conf",
                                "operation": "Update",
                                "apiVersion": "nodus.dev/v1beta1",
                                "time": TIME,
                                "fieldsType": "FieldsV1",
                                "fieldsV1": {
                                    "f:spec": {
                                        ".": {},
                                        "f:image": {},
                                        "f:task": {},
                                        "f:command": {},
                                    }
                                },
                                "subresource": ABSENT,
                            }
                        ],
                    },
                    "spec": {"task": "SFT", "command": ["python", "-m", "trainer"]},
                },
                save={"rv": "metadata.resourceVersion", "uid": "metadata.uid"},
            ),
        ),
    ),
    Sequence(
        "get-answers-what-create-answered",
        f"{BASIC} TestNamespaceScopedCRUD",
        (
            Step("POST", TRS, 201, runtime("a"), save={"made": "metadata"}),
            get("a", expect={"kind": "TrainingRuntime", "metadata": "{made}"}),
        ),
    ),
    Sequence(
        "create-drops-system-fields-the-client-sets",
        f"{OBJECTMETA} TestPostInvalidObjectMeta; {CONVENTIONS} Metadata (read-only fields)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(
                    runtime("a"),
                    uid="11111111-1111-1111-1111-111111111111",
                    generation=7,
                    creationTimestamp="2001-01-01T00:00:00Z",
                ),
                expect={
                    "metadata": {
                        "uid": Re("(?!11111111-1111-1111-1111-111111111111).*"),
                        "generation": 1,
                        "creationTimestamp": Re("(?!2001-).*"),
                    }
                },
            ),
        ),
    ),
    Sequence(
        "create-prunes-unknown-metadata-fields",
        f"{OBJECTMETA} TestPostInvalidObjectMeta (metadata.unknown is pruned)",
        (
            Step(
                "POST",
                f"{TRS}?fieldValidation=Ignore",
                201,
                with_meta(runtime("a"), unknown=42),
                expect={"metadata": {"unknown": ABSENT}},
            ),
            get("a", expect={"metadata": {"unknown": ABSENT}}),
        ),
    ),
    Sequence(
        "create-with-a-non-string-label-is-400-cannot-be-handled",
        f"{OBJECTMETA} TestPostInvalidObjectMeta (labels foo: 42)",
        (
            Step(
                "POST",
                TRS,
                400,
                with_meta(runtime("a"), labels={"foo": 42, "bar": "abc"}),
                expect=failure(
                    400,
                    "BadRequest",
                    CANNOT + "json: cannot unmarshal number into Go struct field "
                    "ObjectMeta.labels of type string",
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "metadata-that-is-not-an-object-is-400-cannot-be-handled",
        f"{OBJECTMETA_COERCE} (json.Unmarshal into ObjectMeta); {HANDLERS}",
        (
            Step(
                "POST",
                TRS,
                400,
                {**runtime("a"), "metadata": 5},
                expect=failure(
                    400,
                    "BadRequest",
                    CANNOT + "json: cannot unmarshal number into Go value of type v1.ObjectMeta",
                ),
            ),
        ),
    ),
    Sequence(
        "labels-as-a-list-are-400-cannot-be-handled",
        f"{OBJECTMETA_COERCE}; {HANDLERS}",
        (
            Step(
                "POST",
                TRS,
                400,
                with_meta(runtime("a"), labels=["a"]),
                expect=failure(
                    400,
                    "BadRequest",
                    CANNOT + "json: cannot unmarshal array into Go struct field "
                    "ObjectMeta.labels of type map[string]string",
                ),
            ),
        ),
    ),
    Sequence(
        "an-owner-reference-field-of-the-wrong-type-names-its-struct",
        f"{OBJECTMETA_COERCE}; Go encoding/json UnmarshalTypeError (innermost struct, full path)",
        (
            Step(
                "POST",
                TRS,
                400,
                with_meta(runtime("a"), ownerReferences=[{"name": 5}]),
                expect=failure(
                    400,
                    "BadRequest",
                    CANNOT + "json: cannot unmarshal number into Go struct field "
                    "OwnerReference.ownerReferences.name of type string",
                ),
            ),
        ),
    ),
    Sequence(
        "a-null-label-value-is-the-empty-string",
        f'{OBJECTMETA_COERCE} (Go decodes null into a string as "")',
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), labels={"k": None}),
                expect={"metadata": {"labels": {"k": ""}}},
            ),
        ),
    ),
    Sequence(
        "a-merge-patch-leaving-metadata-of-the-wrong-type-is-422-about-the-patch",
        "apiserver pkg/endpoints/handlers/patch.go applyPatchToCurrentObject (DecodeInto "
        "error: NewInvalid at patch)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                422,
                {"metadata": {"labels": {"k": 1}}},
                "application/merge-patch+json",
                expect=failure(
                    422,
                    "Invalid",
                    Re(
                        r' "" is invalid: patch: Invalid value: "\{.*\}": json: cannot unmarshal '
                        r"number into Go struct field ObjectMeta\.labels of type string"
                    ),
                    {"causes": [cause("FieldValueInvalid", "patch")]},
                ),
            ),
            get("a", expect={"metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "second-create-is-409-already-exists",
        f"{BASIC} TestNameConflict; {STORE} TestStoreCreate",
        (
            create("a"),
            Step(
                "POST",
                TRS,
                409,
                runtime("a"),
                expect=failure(
                    409,
                    "AlreadyExists",
                    'trainingruntimes.nodus.dev "a" already exists',
                    tr_details("a"),
                ),
            ),
            get("a", expect={"metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "get-of-a-missing-object-is-404-not-found",
        f"{APISERVER} TestGetMissing",
        (gone("missing"),),
    ),
    Sequence(
        "create-without-name-or-generate-name-is-422",
        f"{BASIC} TestInvalidCRUD (typed body without a name)",
        (
            Step(
                "POST",
                TRS,
                422,
                {"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingRuntime", "spec": {}},
                expect=failure(
                    422,
                    "Invalid",
                    contains("metadata.name: Required value: name or generateName is required"),
                    {
                        "group": "nodus.dev",
                        "kind": "TrainingRuntime",
                        "causes": contains(
                            cause(
                                "FieldValueRequired",
                                "metadata.name",
                                "Required value: name or generateName is required",
                            )
                        ),
                    },
                ),
            ),
        ),
    ),
    Sequence(
        "create-from-generate-name-appends-five-characters",
        f"{APISERVER} TestNamedCreaterWithGenerateName; {STORE} "
        f"TestStoreCreateWithRetryNameGenerate",
        (
            Step(
                "POST",
                TRS,
                201,
                {**runtime(), "metadata": {"generateName": "gen-"}},
                expect={
                    "metadata": {
                        "name": Re("gen-[bcdfghjklmnpqrstvwxz2456789]{5}"),
                        "generateName": "gen-",
                    }
                },
                save={"name": "metadata.name"},
            ),
            Step("GET", f"{TRS}/{{name}}", 200, expect={"metadata": {"generateName": "gen-"}}),
        ),
    ),
    Sequence(
        "create-with-an-invalid-name-is-422-naming-metadata-name",
        f"{CONVENTIONS} Naming (DNS-1123 subdomain); apimachinery validation.NameIsDNSSubdomain",
        (
            Step(
                "POST",
                TRS,
                422,
                runtime("Bad_Name"),
                expect=invalid(
                    "Bad_Name",
                    f'TrainingRuntime.nodus.dev "Bad_Name" is invalid: metadata.name: Invalid '
                    f'value: "Bad_Name": {NAME_MESSAGE}',
                    [
                        cause(
                            "FieldValueInvalid",
                            "metadata.name",
                            f'Invalid value: "Bad_Name": {NAME_MESSAGE}',
                        )
                    ],
                ),
            ),
        ),
    ),
    Sequence(
        "create-with-a-name-over-253-characters-is-422",
        "apimachinery pkg/util/validation IsDNS1123Subdomain (DNS1123SubdomainMaxLength 253)",
        (
            Step(
                "POST",
                TRS,
                422,
                runtime("a" * 254),
                expect=failure(
                    422,
                    "Invalid",
                    contains(
                        "metadata.name: Invalid value:", "must be no more than 253 characters"
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "create-with-an-invalid-label-key-is-422-at-metadata-labels",
        "apimachinery pkg/apis/meta/v1/validation ValidateLabels (qualified name)",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), labels={"bad key": "v"}),
                expect=failure(
                    422,
                    "Invalid",
                    contains('metadata.labels: Invalid value: "bad key": name part must consist'),
                    {
                        "name": "a",
                        "group": "nodus.dev",
                        "kind": "TrainingRuntime",
                        "causes": [cause("FieldValueInvalid", "metadata.labels", ANY)],
                    },
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "create-with-a-label-value-over-63-characters-is-422",
        "apimachinery pkg/apis/meta/v1/validation ValidateLabels (IsValidLabelValue)",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), labels={"k": "v" * 64}),
                expect=failure(
                    422,
                    "Invalid",
                    contains("metadata.labels", "must be no more than 63 characters"),
                ),
            ),
        ),
    ),
    Sequence(
        "create-with-an-invalid-annotation-key-is-422",
        "apimachinery pkg/api/validation/objectmeta.go ValidateAnnotations",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), annotations={"bad key": "v"}),
                expect=failure(
                    422,
                    "Invalid",
                    contains(
                        'metadata.annotations: Invalid value: "bad key": name part must consist'
                    ),
                    {"causes": [cause("FieldValueInvalid", "metadata.annotations", ANY)]},
                ),
            ),
        ),
    ),
    Sequence(
        "create-with-annotations-over-256-kib-is-422-too-long",
        "apimachinery pkg/api/validation/objectmeta.go ValidateAnnotationsSize "
        "(TotalAnnotationSizeLimitB)",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), annotations={"big": "x" * (256 * 1024)}),
                expect=failure(
                    422,
                    "Invalid",
                    contains("metadata.annotations: Too long: may not be more than 262144 bytes"),
                    {"causes": [cause("FieldValueTooLong", "metadata.annotations", ANY)]},
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "create-with-another-namespace-in-the-body-is-400",
        f"{APISERVER} TestUpdatePreventsMismatchedNamespace; apiserver handlers/rest.go checkName",
        (
            Step(
                "POST",
                TRS,
                400,
                runtime("a", namespace="other"),
                expect=failure(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "create-with-another-api-version-is-400",
        f"{APISERVER} TestCreateChecksAPIVersion",
        (
            Step(
                "POST",
                TRS,
                400,
                {**runtime("a"), "apiVersion": "nodus.dev/v1"},
                expect=failure(400, "BadRequest", contains("nodus.dev/v1")),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "create-without-a-namespace-in-the-body-takes-the-urls",
        f"{APISERVER} TestUpdateAllowsMissingNamespace; TestCreateInNamespace",
        (Step("POST", TRS, 201, runtime("a"), expect={"metadata": {"namespace": "demo"}}),),
    ),
    Sequence(
        "create-ignores-a-client-status",
        "apiextensions-apiserver test/integration/subresources_test.go TestStatusSubresource",
        (
            Step(
                "POST",
                TRS,
                201,
                {**runtime("a"), "status": {"phase": "Ready", "imageDigest": "sha256:" + "0" * 64}},
                expect={"status": {"phase": Re("(?!Ready).*"), "imageDigest": ABSENT}},
            ),
        ),
    ),
    Sequence(
        "list-answers-the-list-kind-with-typed-items-and-a-resource-version",
        f"{BASIC} TestNamespaceScopedCRUD (ListKind, list apiVersion)",
        (
            create("a"),
            create("b"),
            Step(
                "GET",
                TRS,
                200,
                expect={
                    "apiVersion": "nodus.dev/v1beta1",
                    "kind": "TrainingRuntimeList",
                    "metadata": {"resourceVersion": RV, "continue": ABSENT},
                    "items": [
                        {
                            "apiVersion": "nodus.dev/v1beta1",
                            "kind": "TrainingRuntime",
                            "metadata": {"name": "a"},
                        },
                        {
                            "apiVersion": "nodus.dev/v1beta1",
                            "kind": "TrainingRuntime",
                            "metadata": {"name": "b"},
                        },
                    ],
                },
            ),
        ),
    ),
    Sequence(
        "an-empty-list-has-an-empty-items-array",
        f"{BASIC} testFieldSelector (initial list of 0 items)",
        (Step("GET", TRS, 200, expect={"kind": "TrainingRuntimeList", "items": []}),),
    ),
    Sequence(
        "a-cluster-wide-list-holds-every-readable-namespace",
        f"{BASIC} TestCrossNamespaceListWatch",
        (
            create("a"),
            Step(
                "GET",
                "/apis/nodus.dev/v1beta1/trainingruntimes",
                200,
                expect={
                    "kind": "TrainingRuntimeList",
                    "items": contains({"metadata": {"name": "a", "namespace": "demo"}}),
                },
            ),
        ),
    ),
    Sequence(
        "create-at-the-cluster-scope-of-a-namespaced-kind-is-404",
        f"{BASIC} TestNoNamespaceReject; {CRD_HANDLER} (a namespaced kind's cluster-scoped "
        "path serves list and watch only; any other verb goes to the delegate, a 404). kube's "
        "delegate writes `404 page not found`, which client-go reads as this Status",
        (
            # RBAC first: a project admin holds no create at the cluster scope.
            Step(
                "POST",
                CLUSTER_TRS,
                403,
                runtime("a"),
                expect=failure(
                    403,
                    "Forbidden",
                    'trainingruntimes.nodus.dev is forbidden: User "alice" cannot create resource '
                    '"trainingruntimes" in API group "nodus.dev" at the cluster scope',
                ),
            ),
            # One who may create everywhere gets past it to the handler, which serves no create
            # there.
            Step(
                "POST",
                CLUSTER_TRS,
                404,
                runtime("a"),
                who="root",
                expect=failure(404, "NotFound", "the server could not find the requested resource"),
            ),
            Step(
                "POST",
                CLUSTER_TRS,
                404,
                with_meta(runtime("a"), namespace="demo"),
                who="root",
                expect=failure(404, "NotFound"),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "an-object-path-at-the-cluster-scope-of-a-namespaced-kind-is-404",
        f"{CRD_HANDLER} (namespaced kind, no namespace, neither list nor watch)",
        (
            create("a"),
            Step("GET", f"{CLUSTER_TRS}/a", 404, who="root", expect=failure(404, "NotFound")),
            Step(
                "PUT",
                f"{CLUSTER_TRS}/a",
                404,
                with_meta(runtime("a"), resourceVersion="{rv}", labels={"x": "y"}),
                who="root",
                expect=failure(404, "NotFound"),
            ),
            Step(
                "PATCH",
                f"{CLUSTER_TRS}/a",
                404,
                {"metadata": {"labels": {"x": "y"}}},
                MERGE,
                who="root",
                expect=failure(404, "NotFound"),
            ),
            Step("DELETE", f"{CLUSTER_TRS}/a", 404, who="root", expect=failure(404, "NotFound")),
            get("a", expect={"metadata": {"uid": "{uid}", "labels": ABSENT}}),
        ),
    ),
    Sequence(
        "deletecollection-at-the-cluster-scope-of-a-namespaced-kind-is-404",
        f"{CRD_HANDLER} (deletecollection is not among possiblyAcrossAllNamespacesVerbs)",
        (
            create("a"),
            Step("DELETE", CLUSTER_TRS, 404, who="root", expect=failure(404, "NotFound")),
            Step(
                "DELETE",
                CLUSTER_TRS,
                403,
                expect=failure(
                    403,
                    "Forbidden",
                    'trainingruntimes.nodus.dev is forbidden: User "alice" cannot '
                    'deletecollection resource "trainingruntimes" in API group "nodus.dev" at '
                    "the cluster scope",
                ),
            ),
            get("a", expect={"metadata": {"uid": "{uid}"}}),
        ),
    ),
    Sequence(
        "get-by-an-unknown-resource-is-404",
        f"{APISERVER} TestNotFound",
        (
            Step(
                "GET",
                "/apis/nodus.dev/v1beta1/namespaces/demo/nosuchthings",
                404,
                expect=failure(404, "NotFound"),
            ),
        ),
    ),
    Sequence(
        "the-same-name-in-two-namespaces-are-two-objects",
        f"{BASIC} TestSameNameDiffNamespace",
        (
            create("a"),
            Step(
                "POST",
                "/apis/nodus.dev/v1beta1/namespaces/nodus/trainingruntimes",
                201,
                runtime("a"),
                who="root",
                expect={"metadata": {"namespace": "nodus", "uid": Re("(?!{uid}).*")}},
            ),
            get("a", expect={"metadata": {"uid": "{uid}"}}),
        ),
    ),
    Sequence(
        "large-integers-survive-a-round-trip",
        f"{BASIC} TestPreserveInt",
        (
            Step(
                "POST",
                TRS,
                201,
                runtime("a", estimate={"secondsPerStep": {"h100-80g": 9007199254740993}}),
            ),
            get("a", expect={"spec": {"estimate": {"secondsPerStep": {"h100-80g": ANY}}}}),
        ),
    ),
    Sequence(
        "a-dotted-name-is-a-valid-subdomain",
        f"{CONVENTIONS} Naming (DNS-1123 subdomain allows dots)",
        (Step("POST", TRS, 201, runtime("a.b-c"), expect={"metadata": {"name": "a.b-c"}}),),
    ),
    Sequence(
        "an-invalid-generate-name-is-422-at-metadata-generate-name",
        "apimachinery pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor (generateName "
        "checked with prefix=true)",
        (
            Step(
                "POST",
                TRS,
                422,
                {**runtime(), "metadata": {"generateName": "Gen-"}},
                expect=failure(
                    422,
                    "Invalid",
                    contains('metadata.generateName: Invalid value: "Gen-"'),
                    {"causes": contains(cause("FieldValueInvalid", "metadata.generateName"))},
                ),
            ),
        ),
    ),
    Sequence(
        "a-label-key-name-over-63-characters-is-422",
        "apimachinery pkg/util/validation IsQualifiedName (name part at most 63)",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), labels={"k" * 64: "v"}),
                expect=failure(
                    422,
                    "Invalid",
                    contains(
                        "metadata.labels: Invalid value:", "must be no more than 63 characters"
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "a-label-key-prefix-must-be-a-subdomain",
        "apimachinery pkg/util/validation IsQualifiedName (prefix part)",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), labels={"Bad_Prefix/k": "v"}),
                expect=failure(422, "Invalid", contains("metadata.labels", "prefix part")),
            ),
        ),
    ),
    Sequence(
        "a-label-value-with-bad-characters-is-422",
        "apimachinery pkg/util/validation IsValidLabelValue",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), labels={"k": "white space"}),
                expect=failure(
                    422,
                    "Invalid",
                    contains(
                        'metadata.labels: Invalid value: "white space": a valid label must be an '
                        "empty string or consist of alphanumeric characters"
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "an-empty-label-value-is-valid",
        "apimachinery pkg/util/validation IsValidLabelValue (empty allowed)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), labels={"k": ""}),
                expect={"metadata": {"labels": {"k": ""}}},
            ),
        ),
    ),
    Sequence(
        "an-invalid-finalizer-name-is-422",
        "apimachinery pkg/api/validation/objectmeta.go ValidateFinalizerName",
        (
            Step(
                "POST",
                TRS,
                422,
                with_meta(runtime("a"), finalizers=["bad finalizer"]),
                expect=failure(
                    422,
                    "Invalid",
                    contains('metadata.finalizers: Invalid value: "bad finalizer"'),
                    {"causes": contains(cause("FieldValueInvalid", "metadata.finalizers"))},
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "a-viewer-may-not-create-403-forbidden",
        "apiserver pkg/endpoints/filters/authorization.go (Forbidden message)",
        (
            Step(
                "POST",
                TRS,
                403,
                runtime("a"),
                who="bob",
                expect=failure(
                    403,
                    "Forbidden",
                    contains(
                        'trainingruntimes.nodus.dev is forbidden: User "bob" cannot create '
                        'resource "trainingruntimes" in API group "nodus.dev" in the namespace '
                        '"demo"'
                    ),
                    {"group": "nodus.dev", "kind": "trainingruntimes"},
                ),
            ),
        ),
    ),
    Sequence(
        "an-anonymous-request-is-401",
        "apiserver pkg/endpoints/handlers/responsewriters/errors.go (Unauthorized)",
        (
            Step(
                "GET",
                TRS,
                401,
                who="anonymous",
                expect=failure(401, "Unauthorized", "Unauthorized"),
            ),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
