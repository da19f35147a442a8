"""Rule 7: a runtime's ``spec.parameters`` JSON Schema and its ``defaults.parameters``.

The schema must be valid under the 2020-12 meta-schema (every violation is reported at its own
path under ``spec.parameters``), describe an object at its top level, stay within 64 KiB of
compact JSON, and refer only to itself (a ``$ref`` elsewhere would make the server fetch URLs).
``defaults.parameters`` must then validate against it, except that ``required`` is not enforced:
defaults are merged under a job's own values.

Rules that keep validation bounded, whatever the schema.
"""

from __future__ import annotations

from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema_specifications import REGISTRY as SPECIFICATIONS

from runtimes.apimachinery import bounds, regexes
from runtimes.apimachinery import fielderrors as fe
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.catalog.parameter_keywords import FORMAT_CHECKER
from runtimes.catalog.parameters import parameter_errors
from runtimes.registry.trainingruntime.parameter_refs import json_path, ref_errors

# * Every regular expression (``pattern``, each name in ``patternProperties``) must compile under
#   RE2 (`apimachinery.regexes`), the linear-time engine every parameter check runs on. A
#   backreference, lookaround, atomic group or possessive quantifier is refused at its field
#   (``spec.parameters.properties.x.pattern``), and the Status's `fix` says which construct to drop.
# * Every local ``$ref`` must resolve, and none may loop back without going into the value
#   (`parameter_refs`), or validation would recurse without end.
# * ``spec.parameters`` and ``spec.defaults.parameters`` nest at most `FREE_FORM_MAX_DEPTH` (64)
#   levels. The body limit (100, `apimachinery.bounds`) bounds everything else; these two free-form
#   fields are where depth is the writer's choice, and 64 keeps a stored runtime (with the four
#   levels its managedFields add) well inside the limit, so what a client reads it can write back.

PARAMETERS_MAX_BYTES = 64 * 1024
FREE_FORM_MAX_DEPTH = 64
META_SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"
_PATH = "spec.parameters"
_DEFAULTS_PATH = "spec.defaults.parameters"
# The meta-schema asks for format "regex" on patterns: checked by compiling under RE2.
_META_VALIDATOR = Draft202012Validator(
    Draft202012Validator.META_SCHEMA,
    format_checker=FORMAT_CHECKER,
    registry=SPECIFICATIONS,
)


def _shown(value: Any) -> Any:
    """Scalars are shown as they are; objects and arrays by type, as apiextensions does."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return value


def _foreign_refs(schema: Any) -> list[tuple[str, Any]]:
    """Every ``$ref``/``$dynamicRef`` that points outside the document, iteratively (deep
    schemas must not exhaust the stack)."""
    found: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [(_PATH, schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                child = json_path(path, [key])
                if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    if not value.startswith("#"):
                        found.append((child, value))
                else:
                    stack.append((child, value))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(node))
    return sorted(found)


# Checking a schema against the 2020-12 meta-schema is most of a write's validation, and most
# writes (a label, a status, a patch elsewhere in the spec) leave the schema as it was: the
# verdict is remembered by the schema's JSON (key order included, as errors at one path come in
# the schema's order), for a bounded number of schemas.
_META_VERDICTS: dict[bytes, tuple[FieldError, ...]] = {}
_META_VERDICTS_MAX = 512


def _meta_schema_errors_cached(schema: dict[str, Any], text: bytes) -> list[FieldError]:
    verdict = _META_VERDICTS.get(text)
    if verdict is None:
        verdict = tuple(_meta_schema_errors(schema))
        if len(_META_VERDICTS) >= _META_VERDICTS_MAX:
            # The oldest goes (dicts keep order); another thread may have just taken it.
            _META_VERDICTS.pop(next(iter(_META_VERDICTS), b""), None)
        _META_VERDICTS[text] = verdict
    return list(verdict)


def _meta_schema_errors(schema: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    try:
        for error in _META_VALIDATOR.iter_errors(schema):
            if error.validator == "format" and error.validator_value == "regex":
                errors.append(_regex_error(error))
                continue
            path = json_path(_PATH, error.absolute_path)
            errors.append(
                fe.invalid(path, _shown(error.instance), f"not valid JSON Schema: {error.message}")
            )
    except RecursionError:
        errors.append(fe.invalid(_PATH, "object", "is nested too deeply to check"))
    if not errors:
        errors = ref_errors(schema, _PATH)
    return sorted(errors, key=lambda e: e.field)


def _regex_error(error: ValidationError) -> FieldError:
    """A ``pattern`` (or a ``patternProperties`` name) that RE2 cannot compile."""
    parts = list(error.absolute_path)
    if "propertyNames" in error.relative_schema_path:
        parts.append(str(error.instance))  # the name itself, under patternProperties
    path = json_path(_PATH, parts)
    refused = error.cause
    if not isinstance(refused, regexes.UnsupportedPattern):
        return fe.invalid(path, error.instance, "not a regular expression")
    detail = f"{refused} (parameter patterns run on RE2, which never backtracks)"
    return fe.FieldError(
        path,
        "FieldValueInvalid",
        fe.invalid(path, error.instance, detail).message,
        f"{path}: {refused.fix}",
    )


def parameters_errors(spec: dict[str, Any]) -> list[FieldError]:
    """Every problem with ``spec.parameters`` and ``spec.defaults.parameters``."""
    schema = spec.get("parameters")
    if not isinstance(schema, dict):
        return []  # absent, or a type error the structural check reports
    try:
        # The same JSON keys the defaults' compiled validator (catalog.parameters).
        text = orjson.dumps(schema)
    except orjson.JSONEncodeError as error:
        # orjson refuses non-string keys and more than 254 levels of nesting.
        return [fe.invalid(_PATH, "object", f"is not a JSON document we can store: {error}")]
    if len(text) > PARAMETERS_MAX_BYTES:
        return [fe.too_long(_PATH, PARAMETERS_MAX_BYTES)]
    if bounds.depth_of(schema, FREE_FORM_MAX_DEPTH) > FREE_FORM_MAX_DEPTH:
        return [_too_deep(_PATH)]
    errors = _meta_schema_errors_cached(schema, text)
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in (META_SCHEMA_URI, META_SCHEMA_URI + "#"):
        errors.append(fe.not_supported(json_path(_PATH, ["$schema"]), dialect, [META_SCHEMA_URI]))
    errors.extend(
        fe.invalid(path, ref, "only references within this schema ('#/…') are supported")
        for path, ref in _foreign_refs(schema)
    )
    kind = schema.get("type")
    if kind is None:
        errors.append(
            fe.required(
                f"{_PATH}.type", 'the top level must be an object schema: set type: "object"'
            )
        )
    elif kind != "object":
        errors.append(
            fe.invalid(
                f"{_PATH}.type", kind, 'the top level must be an object schema (type: "object")'
            )
        )
    if errors:
        return errors
    return _defaults_errors(spec, schema, text)


def _defaults_errors(
    spec: dict[str, Any], schema: dict[str, Any], schema_json: bytes
) -> list[FieldError]:
    defaults = spec.get("defaults")
    values = defaults.get("parameters") if isinstance(defaults, dict) else None
    if not isinstance(values, dict):
        return []
    if bounds.depth_of(values, FREE_FORM_MAX_DEPTH) > FREE_FORM_MAX_DEPTH:
        return [_too_deep(_DEFAULTS_PATH)]
    try:
        orjson.dumps(values)
    except orjson.JSONEncodeError as error:
        path = _DEFAULTS_PATH
        return [fe.invalid(path, "object", f"is not a JSON document we can store: {error}")]
    try:
        return parameter_errors(
            schema,
            values,
            _DEFAULTS_PATH,
            enforce_required=False,
            schema_json=schema_json,
        )
    except Exception as error:  # a pathological schema must give a 422, never a 500
        return [fe.invalid(_PATH, "object", f"could not be applied to the defaults: {error}")]


def _too_deep(path: str) -> FieldError:
    return fe.invalid(path, "object", f"must nest at most {FREE_FORM_MAX_DEPTH} levels")
