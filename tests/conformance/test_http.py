"""Media types, methods, paths and field validation: what the handlers answer before storage."""

from __future__ import annotations

import json
import re

import pytest

from tests.conformance.conftest import InProcess
from tests.conformance.harness import (
    APPLY,
    GV,
    IMAGE,
    JSON_PATCH,
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
    merge,
    params,
    run,
    runtime,
    with_meta,
)
from tests.conformance.patterns import (
    ABSENT,
    ANY,
    Re,
    contains,
    same,
)

APISERVER = "apiserver pkg/endpoints/apiserver_test.go"
FIELD_VALIDATION = "kubernetes test/e2e/apimachinery/field_validation.go"
FIELD_VALIDATION_INT = "kubernetes test/integration/apiserver/field_validation_test.go"
NEGOTIATE = "apiserver pkg/endpoints/handlers/negotiation/negotiate_test.go"
CRD_HANDLER = "apiextensions-apiserver pkg/apiserver/customresource_handler.go serveResource"
VALIDATOR = "apiextensions-apiserver pkg/registry/customresource/validator.go"
NAMER = "apiserver pkg/endpoints/handlers/namer.go"
CREATE = "apiserver pkg/endpoints/handlers/create.go"
REQUEST_INFO = "apiserver pkg/endpoints/request/requestinfo.go"
TYPE_CHECK = "kube-openapi pkg/validation/validate/type.go typeValidator.Validate"

# kube's handlers (create.go, update.go transformDecodeError) before a strict decoding error.
CANNOT = 'TrainingRuntime in version "v1beta1" cannot be handled as a TrainingRuntime: '
STRICT = CANNOT + "strict decoding error: "

YAML_BODY = f"""apiVersion: nodus.dev/v1beta1
kind: TrainingRuntime
metadata:
  name: "y"
spec:
  image: "{IMAGE}"
  task: SFT
  command: [python, -m, trainer]
"""


# spec.task given twice (JSON allows it; the last one wins).
REPEATED_TASK = (
    json.dumps(runtime("a"), separators=(",", ":"))
    .replace('"task":"SFT"', '"task":"DPO","task":"SFT"')
    .encode()
)


# A preset whose integer fields are sent as whole floats (orjson writes 1.0 and 2.0).
WHOLE_FLOAT_PRESET = {
    "model": "Qwen/Qwen3-0.6B",
    "method": "LoRA",
    "resources": {"nodes": 1.0, "gpu": {"count": 2.0, "type": ["H100"]}},
}
FOUR_GPUS = {"nodes": 1.0, "gpu": {"count": 4.0, "type": ["H100"]}}


def unknown_field_create(query: str, status: int, **kw: object) -> Step:
    body = runtime("a")
    body["spec"]["foo"] = "bar"
    return Step("POST", f"{TRS}{query}", status, body, **kw)  # type: ignore[arg-type]


def finalizer_warning(name: str, path: bool = False) -> str:
    """kube's Warning header value for one finalizer a custom resource's write adds without a
    path (validateKubeFinalizerName); `path`: the name has a domain, only the path is missing."""
    prefer = "prefer a domain-qualified finalizer name" + (" including a path (/)" if path else "")
    # The header quotes the warning, so its own quotes come backslash-escaped.
    text = f'metadata.finalizers: \\"{name}\\": {prefer} to avoid accidental conflicts with '
    return f'299 - "{text}other finalizer writers"'


SEQUENCES = [
    Sequence(
        "create-from-yaml",
        f"{APISERVER} TestCreateYAML",
        (
            Step(
                "POST", TRS, 201, YAML_BODY, "application/yaml", expect={"metadata": {"name": "y"}}
            ),
            get("y", expect={"spec": {"task": "SFT"}}),
        ),
    ),
    Sequence(
        "get-as-yaml",
        f"{NEGOTIATE} TestNegotiate (application/yaml)",
        (
            create("a"),
            get(
                "a",
                headers={"Accept": "application/yaml"},
                expect={"kind": "TrainingRuntime", "metadata": {"name": "a"}},
                expect_headers={"content-type": "application/yaml"},
            ),
        ),
    ),
    Sequence(
        "an-unsupported-request-content-type-is-415",
        "apiserver pkg/endpoints/handlers/negotiation/errors.go NewUnsupportedMediaTypeError",
        (
            Step(
                "POST",
                TRS,
                415,
                "<runtime/>",
                "application/xml",
                expect=failure(
                    415,
                    "UnsupportedMediaType",
                    contains(
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml"
                    ),
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "a-patch-with-a-non-patch-content-type-is-415",
        "apiserver pkg/endpoints/handlers/patch.go (patchTypes)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a",
                415,
                {"spec": {"task": "DPO"}},
                "application/json",
                expect=failure(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                ),
            ),
        ),
    ),
    Sequence(
        "an-accept-the-server-cannot-serve-is-406",
        f"{NEGOTIATE}; apiserver negotiation/errors.go NewNotAcceptableError",
        (
            create("a"),
            get(
                "a",
                406,
                failure(
                    406,
                    "NotAcceptable",
                    contains("only the following media types are accepted: application/json"),
                ),
                headers={"Accept": "text/html"},
            ),
        ),
    ),
    Sequence(
        "accept-with-a-fallback-is-served",
        f"{NEGOTIATE} (first acceptable type wins)",
        (
            create("a"),
            get(
                "a",
                headers={"Accept": "application/vnd.unknown, application/json"},
                expect={"kind": "TrainingRuntime"},
            ),
        ),
    ),
    Sequence(
        "a-wildcard-accept-gets-json",
        NEGOTIATE,
        (
            create("a"),
            get(
                "a",
                headers={"Accept": "*/*"},
                expect_headers={"content-type": Re("application/json.*")},
            ),
        ),
    ),
    Sequence(
        "options-is-405",
        f"{CRD_HANDLER} (NewMethodNotSupported)",
        (
            create("a"),
            Step(
                "OPTIONS",
                f"{TRS}/a",
                405,
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    'options is not supported on resources of kind "trainingruntimes.nodus.dev"',
                ),
            ),
        ),
    ),
    Sequence(
        "an-unknown-subresource-is-404",
        f"{CRD_HANDLER} (only status and scale; the rest falls to NotFound)",
        (create("a"), Step("GET", f"{TRS}/a/nothing", 404, expect=failure(404, "NotFound"))),
    ),
    Sequence(
        "put-on-the-collection-is-400-name-must-be-provided",
        f"{NAMER} errEmptyName; handlers/update.go (the name before the body)",
        (
            Step(
                "PUT",
                TRS,
                400,
                with_meta(runtime("a"), resourceVersion="1"),
                expect=failure(400, "BadRequest", "name must be provided"),
            ),
            # Before the body is read: one of a type no update takes is refused the same way.
            Step(
                "PUT",
                TRS,
                400,
                "<runtime/>",
                "application/xml",
                expect=failure(400, "BadRequest", "name must be provided"),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "patch-on-the-collection-is-400-name-must-be-provided",
        f"{NAMER} errEmptyName; handlers/patch.go (the patch type first, then the name)",
        (
            Step(
                "PATCH",
                TRS,
                400,
                {"spec": {"task": "DPO"}},
                MERGE,
                expect=failure(400, "BadRequest", "name must be provided"),
            ),
            Step(
                "PATCH",
                TRS,
                415,
                {"spec": {"task": "DPO"}},
                "application/json",
                expect=failure(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                ),
            ),
        ),
    ),
    Sequence(
        "a-viewer-is-refused-a-put-on-the-collection-before-its-name-is-missed",
        f"apiserver pkg/endpoints/filters/authorization.go (verb update, no name) before {NAMER}",
        (
            Step(
                "PUT",
                TRS,
                403,
                with_meta(runtime("a"), resourceVersion="1"),
                who="bob",
                expect=failure(
                    403,
                    "Forbidden",
                    'trainingruntimes.nodus.dev is forbidden: User "bob" cannot update resource '
                    '"trainingruntimes" in API group "nodus.dev" in the namespace "demo"',
                ),
            ),
        ),
    ),
    Sequence(
        "a-viewer-is-refused-a-write-before-its-media-type-is-read",
        "apiserver pkg/endpoints/filters/authorization.go (before any handler) before "
        "handlers/patch.go (patchTypes) and handlers/update.go (the body's decoder)",
        (
            create("a"),
            *(
                Step(
                    method,
                    path,
                    403,
                    "spec: {task: DPO}",
                    "text/plain",
                    who="bob",
                    expect=failure(
                        403,
                        "Forbidden",
                        Re(
                            rf'trainingruntimes\.nodus\.dev {quoted}is forbidden: User "bob" '
                            rf'cannot {verb} resource "trainingruntimes" in API group '
                            r'"nodus\.dev" in the namespace "demo"'
                        ),
                    ),
                )
                for method, path, verb, quoted in (
                    ("PATCH", f"{TRS}/a", "patch", '"a" '),
                    ("PUT", f"{TRS}/a", "update", '"a" '),
                    ("PATCH", TRS, "patch", ""),
                )
            ),
            # An editor who may write gets as far as the media type.
            Step(
                "PATCH",
                f"{TRS}/a",
                415,
                "spec: {task: DPO}",
                "text/plain",
                expect=failure(415, "UnsupportedMediaType"),
            ),
            Step(
                "PUT",
                f"{TRS}/a",
                415,
                "spec: {task: DPO}",
                "text/plain",
                expect=failure(415, "UnsupportedMediaType"),
            ),
        ),
    ),
    Sequence(
        "a-caller-who-may-not-read-is-refused-before-what-they-accept-is-judged",
        "apiserver pkg/endpoints/filters/authorization.go (before any handler) before "
        "handlers/negotiation (the handler's NegotiateOutputMediaType: 406)",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}/a",
                403,
                who="charlie",
                headers={"Accept": "application/x-unknown"},
                expect=failure(
                    403,
                    "Forbidden",
                    Re(
                        r'trainingruntimes\.nodus\.dev "a" is forbidden: User "charlie" '
                        r'cannot get resource "trainingruntimes" in API group '
                        r'"nodus\.dev" in the namespace "demo"'
                    ),
                ),
            ),
            # A reader gets as far as the media type.
            Step(
                "GET",
                f"{TRS}/a",
                406,
                who="bob",
                headers={"Accept": "application/x-unknown"},
                expect=failure(406, "NotAcceptable"),
            ),
        ),
    ),
    Sequence(
        "post-to-an-item-path-creates-from-the-body-and-an-existing-name-is-409",
        f"{CREATE} (createHandler: the URL's name only names the admission request)",
        (
            create("a"),
            Step(
                "POST",
                f"{TRS}/a",
                409,
                runtime("a"),
                expect=failure(
                    409, "AlreadyExists", 'trainingruntimes.nodus.dev "a" already exists'
                ),
            ),
        ),
    ),
    Sequence(
        "post-to-an-item-path-creates-the-object-its-body-names",
        f"{CREATE} (namedCreaterAdapter drops the URL's name); {CRD_HANDLER} (create)",
        (
            Step(
                "POST",
                f"{TRS}/a",
                201,
                runtime("b"),
                expect={"metadata": {"name": "b", "namespace": "demo"}},
            ),
            get("b"),
            gone("a"),
            # A body without a name takes none from the URL.
            Step(
                "POST",
                f"{TRS}/c",
                422,
                {"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingRuntime", "spec": {}},
                expect=failure(
                    422,
                    "Invalid",
                    contains("metadata.name: Required value: name or generateName is required"),
                ),
            ),
            gone("c"),
            # The body is a whole object: a patch type is refused as by any create.
            Step(
                "POST",
                f"{TRS}/d",
                415,
                runtime("d"),
                MERGE,
                expect=failure(
                    415,
                    "UnsupportedMediaType",
                    contains(
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml"
                    ),
                ),
            ),
            gone("d"),
        ),
    ),
    Sequence(
        "post-to-a-status-path-is-405",
        f"{CRD_HANDLER} serveStatus (get, update and patch only; NewMethodNotSupported)",
        (
            create("a"),
            Step(
                "POST",
                f"{TRS}/a/status",
                405,
                runtime("a"),
                who="root",
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    'create is not supported on resources of kind "trainingruntimes.nodus.dev"',
                    {"group": "nodus.dev", "kind": "trainingruntimes"},
                ),
            ),
            Step(
                "DELETE",
                f"{TRS}/a/status",
                405,
                who="root",
                expect=failure(
                    405,
                    "MethodNotAllowed",
                    'delete is not supported on resources of kind "trainingruntimes.nodus.dev"',
                ),
            ),
            get("a", expect={"metadata": {"uid": "{uid}"}}),
        ),
    ),
    Sequence(
        "a-trailing-slash-on-a-collection-lists",
        f"{REQUEST_INFO} (path trimmed of slashes)",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}/",
                200,
                expect={
                    "kind": "TrainingRuntimeList",
                    "items": contains({"metadata": {"name": "a"}}),
                },
            ),
            Step(
                "GET",
                f"{GV}/trainingruntimes/",
                200,
                expect={
                    "kind": "TrainingRuntimeList",
                    "items": contains({"metadata": {"name": "a"}}),
                },
            ),
        ),
    ),
    Sequence(
        "a-trailing-slash-on-an-object-path-reads-and-writes-it",
        f"{REQUEST_INFO} (path trimmed of slashes)",
        (
            create("a"),
            Step("GET", f"{TRS}/a/", 200, expect={"metadata": {"name": "a"}}),
            Step(
                "PATCH",
                f"{TRS}/a/",
                200,
                {"metadata": {"labels": {"x": "y"}}},
                MERGE,
                expect={"metadata": {"labels": {"x": "y"}}},
            ),
            Step("GET", f"{TRS}/a/status/", 200, expect={"metadata": {"name": "a"}}),
            Step("POST", f"{TRS}/", 201, runtime("b"), expect={"metadata": {"name": "b"}}),
            Step("DELETE", f"{TRS}/b/", 200, expect={"kind": "Status", "status": "Success"}),
            gone("b"),
        ),
    ),
    Sequence(
        "a-body-of-another-kind-is-422-at-kind",
        f"{VALIDATOR} ValidateTypeMeta (kind must be the CRD's kind)",
        (
            Step(
                "POST",
                TRS,
                422,
                {**runtime("a"), "kind": "Other"},
                expect=failure(
                    422,
                    "Invalid",
                    'Other.nodus.dev "a" is invalid: kind: Invalid value: "Other": must be '
                    "TrainingRuntime",
                    {
                        "name": "a",
                        "group": "nodus.dev",
                        "kind": "Other",
                        "causes": contains(
                            cause(
                                "FieldValueInvalid",
                                "kind",
                                'Invalid value: "Other": must be TrainingRuntime',
                            )
                        ),
                    },
                ),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "a-body-of-another-api-version-is-400",
        "apiserver pkg/endpoints/handlers/create.go (the API version in the data)",
        (
            Step(
                "POST",
                TRS,
                400,
                {**runtime("a"), "apiVersion": "nodus.dev/v1"},
                expect=failure(
                    400,
                    "BadRequest",
                    "the API version in the data (nodus.dev/v1) does not match the expected API "
                    "version (nodus.dev/v1beta1)",
                ),
            ),
        ),
    ),
    Sequence(
        "generate-name-over-253-characters-is-422",
        "apimachinery pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor (generateName)",
        (
            Step(
                "POST",
                TRS,
                422,
                {**runtime(), "metadata": {"generateName": "g" * 254}},
                expect=failure(
                    422,
                    "Invalid",
                    contains(
                        "metadata.generateName: Invalid value:",
                        "must be no more than 253 characters",
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "a-long-generate-name-is-cut-to-58-characters",
        "apiserver pkg/storage/names/generate.go simpleNameGenerator (maxGeneratedNameLength 58)",
        (
            Step(
                "POST",
                TRS,
                201,
                {**runtime(), "metadata": {"generateName": "g" * 100}},
                expect={"metadata": {"name": Re("g{58}[bcdfghjklmnpqrstvwxz2456789]{5}")}},
            ),
        ),
    ),
    Sequence(
        "yaml-1-1-exponent-floats-are-numbers",
        "sigs.k8s.io/yaml (go-yaml: 1e3 is a float)",
        (
            Step(
                "POST",
                TRS,
                201,
                YAML_BODY + "  estimate:\n    secondsPerStep:\n      h100-80g: 1e3\n",
                "application/yaml",
                expect={"spec": {"estimate": {"secondsPerStep": {"h100-80g": 1000}}}},
            ),
        ),
    ),
    Sequence(
        "yaml-numbers-resolve-as-go-yaml-reads-them",
        "sigs.k8s.io/yaml YAMLToJSON (go-yaml v2 resolve: 0962e2 and 017 are numbers, 12:30 "
        "a string)",
        (
            Step(
                "POST",
                TRS,
                201,
                YAML_BODY.replace(
                    "  task: SFT\n",
                    "  task: SFT\n  estimate: {secondsPerStep: "
                    "{h100-80g: 0962e2, a100-80g: 017, l4-24g: 0x10}}\n",
                ).replace('  name: "y"\n', '  name: "y"\n  annotations:\n    at: 12:30\n'),
                "application/yaml",
                expect={
                    "metadata": {"annotations": {"at": "12:30"}},
                    "spec": {
                        "estimate": {
                            "secondsPerStep": {"h100-80g": 96200, "a100-80g": 15, "l4-24g": 16}
                        },
                    },
                },
            ),
        ),
    ),
    Sequence(
        "a-whole-float-in-an-integer-field-is-the-integer",
        f"{TYPE_CHECK} isFloatInt (swag.IsFloat64AJSONInteger); encoding/json writes a whole "
        "float64 as an integer",
        (
            Step(
                "POST",
                TRS,
                201,
                runtime("a", presets=[WHOLE_FLOAT_PRESET]),
                text=contains('"nodes":1,"gpu":{"count":2,"type"'),
            ),
            Step("GET", f"{TRS}/a", 200, text=contains('"nodes":1,"gpu":{"count":2,"type"')),
            # The same in a merge patch, and in a YAML body (where 8.0 is a float too).
            merge("a", {"spec": {"presets": [{**WHOLE_FLOAT_PRESET, "resources": FOUR_GPUS}]}}),
            get("a", text=contains('"gpu":{"count":4,"type"')),
            Step(
                "POST",
                TRS,
                201,
                YAML_BODY.replace('name: "y"', "name: b")
                + "  presets:\n  - {model: Qwen/Qwen3-0.6B, method: LoRA,\n"
                "     resources: {gpu: {count: 8.0, type: [H100]}}}\n",
                "application/yaml",
                text=contains('"gpu":{"count":8,"type"'),
            ),
        ),
    ),
    Sequence(
        "a-fraction-in-an-integer-field-is-invalid-type",
        f"{TYPE_CHECK} (a float64 with a fraction is a number)",
        (
            Step(
                "POST",
                TRS,
                422,
                runtime("a", presets=[{**WHOLE_FLOAT_PRESET, "resources": {"nodes": 1.5}}]),
                expect=invalid(
                    "a",
                    ANY,
                    [
                        cause(
                            "FieldValueTypeInvalid",
                            "spec.presets[0].resources.nodes",
                            'Invalid value: "number": spec.presets[0].resources.nodes in body '
                            'must be of type integer: "number"',
                        )
                    ],
                ),
            ),
        ),
    ),
    Sequence(
        "an-unquoted-yaml-y-is-true-so-it-is-no-name",
        "sigs.k8s.io/yaml (go-yaml v2: y is a boolean); apiextensions-apiserver "
        "schema/objectmeta GetObjectMetaWithOptions; handlers transformDecodeError",
        (
            Step(
                "POST",
                TRS,
                400,
                YAML_BODY.replace('name: "y"', "name: y"),
                "application/yaml",
                expect=failure(
                    400,
                    "BadRequest",
                    CANNOT + "json: cannot unmarshal bool into Go struct field ObjectMeta.name "
                    "of type string",
                ),
            ),
        ),
    ),
    Sequence(
        "an-unqualified-finalizer-name-warns",
        f"{VALIDATOR} validateKubeFinalizerName; customresource/strategy.go WarningsOnCreate",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), finalizers=["hold"]),
                expect_headers={"warning": finalizer_warning("hold")},
            ),
        ),
    ),
    Sequence(
        "a-finalizer-with-a-domain-but-no-path-warns-to-add-one",
        f"{VALIDATOR} validateKubeFinalizerName (a dot and no slash)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), finalizers=["nodus.dev", "hold"]),
                # one warning per name, in name order (sets.String.List)
                expect_headers={
                    "warning": f"{finalizer_warning('hold')}, "
                    f"{finalizer_warning('nodus.dev', path=True)}"
                },
            ),
        ),
    ),
    Sequence(
        "kubes-own-finalizers-do-not-warn",
        f"{VALIDATOR} standardFinalizers (orphan, foregroundDeletion, kubernetes)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), finalizers=["orphan", "kubernetes"]),
                expect_headers={"warning": ABSENT},
            ),
        ),
    ),
    Sequence(
        "only-the-finalizers-a-write-adds-warn",
        "apiextensions-apiserver pkg/registry/customresource/strategy.go WarningsOnUpdate "
        "(generateWarningsFromObj: the new set minus the old)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), finalizers=["hold"]),
                expect_headers={"warning": finalizer_warning("hold")},
            ),
            merge("a", {"metadata": {"labels": {"x": "y"}}}, expect_headers={"warning": ABSENT}),
            merge(
                "a",
                {"metadata": {"finalizers": ["hold", "keep"]}},
                expect_headers={"warning": finalizer_warning("keep")},
            ),
            Step(
                "PATCH",
                f"{TRS}/a",
                200,
                [{"op": "add", "path": "/metadata/finalizers/-", "value": "more"}],
                JSON_PATCH,
                expect_headers={"warning": finalizer_warning("more")},
                save={"rv": "metadata.resourceVersion"},
            ),
            Step(
                "PUT",
                f"{TRS}/a",
                200,
                with_meta(runtime("a"), resourceVersion="{rv}", finalizers=["hold", "put"]),
                expect_headers={"warning": finalizer_warning("put")},
            ),
            Step(
                "PATCH",
                f"{TRS}/a?fieldManager=me",
                200,
                with_meta(runtime("a"), finalizers=["hold", "put", "applied"]),
                APPLY,
                expect_headers={"warning": finalizer_warning("applied")},
            ),
        ),
    ),
    Sequence(
        "a-domain-qualified-finalizer-does-not-warn",
        f"{VALIDATOR} validateKubeFinalizerName",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a"), finalizers=["nodus.dev/hold"]),
                expect_headers={"warning": ABSENT},
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-refuses-an-unknown-field-with-400",
        f"{FIELD_VALIDATION} should detect unknown fields in a CR with Strict; "
        f"{FIELD_VALIDATION_INT}",
        (
            unknown_field_create(
                "?fieldValidation=Strict",
                400,
                expect=failure(400, "BadRequest", STRICT + 'unknown field "spec.foo"'),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "warn-field-validation-drops-the-field-with-a-warning",
        f"{FIELD_VALIDATION} should detect unknown fields with Warn; {FIELD_VALIDATION_INT}",
        (
            unknown_field_create(
                "?fieldValidation=Warn",
                201,
                expect={"spec": {"foo": ABSENT}},
                expect_headers={"warning": '299 - "unknown field \\"spec.foo\\""'},
            ),
        ),
    ),
    Sequence(
        "field-validation-defaults-to-warn",
        f"{FIELD_VALIDATION_INT} (no fieldValidation: Warn)",
        (
            unknown_field_create(
                "",
                201,
                expect={"spec": {"foo": ABSENT}},
                expect_headers={"warning": contains('unknown field \\"spec.foo\\"')},
            ),
        ),
    ),
    Sequence(
        "ignore-field-validation-drops-the-field-silently",
        f"{FIELD_VALIDATION} (Ignore); {FIELD_VALIDATION_INT}",
        (
            unknown_field_create(
                "?fieldValidation=Ignore",
                201,
                expect={"spec": {"foo": ABSENT}},
                expect_headers={"warning": ABSENT},
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-names-every-unknown-field",
        f"{FIELD_VALIDATION_INT} testFieldValidationPost (multiple unknown fields)",
        (
            Step(
                "POST",
                f"{TRS}?fieldValidation=Strict",
                400,
                {**runtime("a", foo=1, bar=2)},
                expect=failure(
                    400,
                    "BadRequest",
                    Re(
                        re.escape(STRICT) + r'unknown field "spec\.(foo|bar)", '
                        r'unknown field "spec\.(foo|bar)"'
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-on-metadata",
        f"{FIELD_VALIDATION_INT} (unknown metadata field)",
        (
            Step(
                "POST",
                f"{TRS}?fieldValidation=Strict",
                400,
                with_meta(runtime("a"), colour="red"),
                expect=failure(400, "BadRequest", STRICT + 'unknown field "metadata.colour"'),
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-on-update",
        f"{FIELD_VALIDATION_INT} testFieldValidationPut",
        (
            create("a"),
            Step(
                "PUT",
                f"{TRS}/a?fieldValidation=Strict",
                400,
                with_meta(runtime("a", foo=1), resourceVersion="{rv}"),
                expect=failure(400, "BadRequest", STRICT + 'unknown field "spec.foo"'),
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-names-a-repeated-json-key-by-its-path",
        f"{FIELD_VALIDATION_INT} (duplicate fields); sigs.k8s.io/json UnmarshalStrict",
        (
            Step(
                "POST",
                f"{TRS}?fieldValidation=Strict",
                400,
                REPEATED_TASK,
                expect=failure(400, "BadRequest", STRICT + 'duplicate field "spec.task"'),
            ),
            gone("a"),
        ),
    ),
    Sequence(
        "warn-field-validation-warns-of-a-repeated-json-key-and-the-last-wins",
        f"{FIELD_VALIDATION_INT} (duplicate fields, Warn)",
        (
            Step(
                "POST",
                TRS,
                201,
                REPEATED_TASK,
                expect={"spec": {"task": "SFT"}},
                expect_headers={"warning": contains('duplicate field \\"spec.task\\"')},
            ),
        ),
    ),
    Sequence(
        "strict-field-validation-names-a-repeated-yaml-key-by-its-line",
        f"{FIELD_VALIDATION_INT}; apimachinery serializer/json (YAMLToJSONStrict, go-yaml v2)",
        (
            Step(
                "POST",
                f"{TRS}?fieldValidation=Strict",
                400,
                YAML_BODY + "  task: DPO\n",
                "application/yaml",
                expect=failure(
                    400,
                    "BadRequest",
                    STRICT + 'yaml: unmarshal errors:\n  line 9: key "task" already set in map',
                ),
            ),
            gone("y"),
        ),
    ),
    Sequence(
        "strict-field-validation-on-a-merge-patch-is-422-about-the-patch",
        "apiserver pkg/endpoints/handlers/patch.go applyPatchToCurrentObject (strict error: "
        "NewInvalid at patch)",
        (
            create("a"),
            merge(
                "a?fieldValidation=Strict",
                {"spec": {"foo": 1}},
                422,
                failure(
                    422,
                    "Invalid",
                    Re(
                        r' "" is invalid: patch: Invalid value: "\{.*\}": strict decoding error: '
                        r'unknown field "spec\.foo"'
                    ),
                    {
                        "name": ABSENT,
                        "kind": ABSENT,
                        "causes": [
                            cause(
                                "FieldValueInvalid",
                                "patch",
                                Re(
                                    r'Invalid value: "\{.*\}": strict decoding error: '
                                    r'unknown field "spec\.foo"'
                                ),
                            )
                        ],
                    },
                ),
            ),
            get("a", expect={"metadata": {"resourceVersion": same("rv")}}),
        ),
    ),
    Sequence(
        "strict-field-validation-names-a-repeated-key-of-a-merge-patch",
        "apiserver pkg/endpoints/handlers/patch.go applyJSPatch (kjson.UnmarshalStrict of the "
        "patch)",
        (
            create("a"),
            Step(
                "PATCH",
                f"{TRS}/a?fieldValidation=Strict",
                422,
                b'{"spec":{"task":"DPO","task":"KTO"}}',
                MERGE,
                expect=failure(
                    422,
                    "Invalid",
                    Re(r'.*: strict decoding error: duplicate field "spec\.task"'),
                ),
            ),
            get("a", expect={"spec": {"task": "SFT"}}),
        ),
    ),
    Sequence(
        "warn-field-validation-on-a-merge-patch",
        f"{FIELD_VALIDATION_INT} testFieldValidationPatchTyped (merge patch, Warn)",
        (
            create("a"),
            merge(
                "a?fieldValidation=Warn",
                {"spec": {"foo": 1}},
                expect={"spec": {"foo": ABSENT}},
                expect_headers={"warning": contains('unknown field \\"spec.foo\\"')},
            ),
        ),
    ),
    Sequence(
        "an-unknown-field-validation-value-is-422",
        "apimachinery pkg/apis/meta/v1/validation ValidateFieldValidation",
        (
            unknown_field_create(
                "?fieldValidation=Loose",
                422,
                expect=failure(
                    422,
                    "Invalid",
                    'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: '
                    '"Loose": supported values: "Ignore", "Strict", "Warn"',
                ),
            ),
        ),
    ),
    Sequence(
        "an-invalid-object-names-each-field-in-causes",
        "apiextensions-apiserver test/integration/validation_test.go TestForProperValidationErrors",
        (
            Step(
                "POST",
                TRS,
                422,
                runtime("a", task="Nope", launcher="Rocket"),
                expect=invalid(
                    "a",
                    Re(
                        r'TrainingRuntime\.nodus\.dev "a" is invalid: '
                        r"\[.*spec\.task: Unsupported value.*\]"
                    ),
                    contains(
                        cause(
                            "FieldValueNotSupported",
                            "spec.task",
                            contains('Unsupported value: "Nope"'),
                        ),
                        cause(
                            "FieldValueNotSupported",
                            "spec.launcher",
                            contains('Unsupported value: "Rocket"'),
                        ),
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "a-missing-required-field-is-required-value",
        "apiextensions-apiserver test/integration/validation_test.go "
        "TestForProperValidationErrors (required)",
        (
            Step(
                "POST",
                TRS,
                422,
                {**runtime("a"), "spec": {"task": "SFT", "command": ["x"]}},
                expect=invalid(
                    "a",
                    contains("spec.image: Required value"),
                    contains(cause("FieldValueRequired", "spec.image", contains("Required value"))),
                ),
            ),
        ),
    ),
    Sequence(
        "a-wrongly-typed-field-is-invalid-type",
        "apiextensions-apiserver test/integration/validation_test.go "
        "TestForProperValidationErrors (type)",
        (
            Step(
                "POST",
                TRS,
                422,
                {**runtime("a"), "spec": {"image": IMAGE, "task": "SFT", "command": "python"}},
                expect=invalid(
                    "a",
                    contains("spec.command: Invalid value"),
                    contains(
                        cause(
                            "FieldValueTypeInvalid",
                            "spec.command",
                            'Invalid value: "string": spec.command in body must be of type '
                            'array: "string"',
                        )
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "a-map-value-of-the-wrong-type-is-named-with-a-dot",
        "kube-openapi pkg/validation/validate/object_validator.go (an additionalProperties "
        'value is validated at o.Path + "." + key); apiextensions-apiserver '
        "pkg/apiserver/validation/validation.go kubeOpenAPIResultToFieldErrors",
        (
            Step(
                "POST",
                TRS,
                422,
                runtime("a", estimate={"secondsPerStep": {"h100-80g": "fast"}}),
                expect=invalid(
                    "a",
                    ANY,
                    [
                        cause(
                            "FieldValueTypeInvalid",
                            "spec.estimate.secondsPerStep.h100-80g",
                            'Invalid value: "string": spec.estimate.secondsPerStep.h100-80g in '
                            'body must be of type number: "string"',
                        )
                    ],
                ),
            ),
        ),
    ),
    Sequence(
        "a-non-object-body-is-400",
        f"{APISERVER} TestCreateChecksDecode",
        (Step("POST", TRS, 400, b"[1,2,3]", expect=failure(400, "BadRequest")),),
    ),
    Sequence(
        "a-body-that-is-not-json-is-400",
        f"{APISERVER} TestCreateChecksDecode; TestWriteJSONDecodeError",
        (Step("POST", TRS, 400, b"{nope", expect=failure(400, "BadRequest")),),
    ),
    Sequence(
        "an-empty-create-is-400-kind-missing",
        "apiextensions-apiserver test/integration/basic_test.go TestInvalidCRUD (typeless body)",
        (
            Step(
                "POST",
                TRS,
                400,
                b"{}",
                expect=failure(400, "BadRequest", contains("Object 'Kind' is missing in")),
            ),
        ),
    ),
    Sequence(
        "pretty-printing-on-request",
        f"{APISERVER} TestGetPretty",
        (
            create("a"),
            Step(
                "GET",
                f"{TRS}/a?pretty=true",
                200,
                text=Re(r'(?s)\{\n  "apiVersion".*'),
                headers={"User-Agent": "kubectl/v1.35.0"},
            ),
            Step(
                "GET",
                f"{TRS}/a",
                200,
                text=Re(r'(?s)\{"apiVersion".*'),
                headers={"User-Agent": "kubectl/v1.35.0"},
            ),
        ),
    ),
    Sequence(
        "a-namespaced-path-for-a-cluster-scoped-kind-is-404",
        "apiextensions-apiserver test/integration/scope_test.go; customresource_handler.go "
        "(scope mismatch)",
        (
            Step(
                "GET",
                f"{GV}/namespaces/demo/accelerators",
                404,
                expect=failure(404, "NotFound"),
            ),
        ),
    ),
]


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, in_process: InProcess) -> None:
    run(sequence, in_process)
