"""A runtime's parameter JSON Schema (Draft 2020-12) and the field errors of values against it.

`parameter_errors` turns jsonschema's errors into Kubernetes-style `FieldError`s whose paths
continue a prefix (``parameters.lora.r``, ``spec.defaults.parameters.epochs``), with a reason a
client understands: a missing property is ``FieldValueRequired``, a value outside an enum is
``FieldValueNotSupported``, an unknown property is ``FieldValueForbidden``, the rest
``FieldValueInvalid`` with the rule it broke.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from runtimes.apimachinery import fielderrors, regexes
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.catalog.parameter_keywords import ParameterValidator, matches

# `compiled_validator` is the one place a parameter schema becomes a jsonschema validator: each
# distinct schema is compiled once and reused, for the API's writes and the console's forms alike.
# Its regular expressions run on RE2 (`parameter_keywords`), never on a backtracking engine.

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# jsonschema's messages repeat the value, which FieldError already prints; say only the rule.
_RULES: dict[str, str] = {
    "minimum": "must be greater than or equal to {}",
    "maximum": "must be less than or equal to {}",
    "exclusiveMinimum": "must be greater than {}",
    "exclusiveMaximum": "must be less than {}",
    "multipleOf": "must be a multiple of {}",
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} properties",
    "maxProperties": "must have at most {} properties",
    "pattern": "must match the regular expression {}",
    "format": "must be a valid {}",
}


# Schemas are at most 64 KiB of JSON (the API's limit), so the cache stays within a few MiB.
VALIDATORS_MAX = 256
# orjson writes NaN and ±Infinity (YAML's .nan, .inf) as null; in its compact JSON a null value
# follows one of these (or is the whole document).
_BARE_NULLS = (b":null", b",null", b"[null")


def compiled_validator(
    schema: Any, *, check_formats: bool = True, schema_json: bytes | None = None
) -> Any:
    """A 2020-12 validator for ``schema``, compiled once per distinct schema and then reused.

    ``check_formats`` asserts ``format`` (an email must be one), as the API does for values.
    Schemas are told apart by their JSON, key order included: jsonschema reports a value's
    errors in the schema's keyword order, so two orderings are two validators. A caller that
    has ``orjson.dumps(schema)`` at hand passes it as ``schema_json``, saving the serialisation.
    """
    try:
        text = orjson.dumps(schema) if schema_json is None else schema_json
    except orjson.JSONEncodeError:
        # Not a JSON document orjson can write (a non-string key, over 254 levels deep): it
        # cannot be keyed, so it is compiled for this call alone.
        return _compile(schema, check_formats)
    validator, has_null = _compiled(text, check_formats)
    # A null in the JSON may stand for a NaN or an infinity in this schema, not for the null of
    # the schema the validator was compiled from; if so, this one is compiled for this call.
    if has_null and validator.schema != schema:
        return _compile(schema, check_formats)
    return validator


@functools.lru_cache(maxsize=VALIDATORS_MAX)
def _compiled(text: bytes, check_formats: bool) -> tuple[Any, bool]:
    # Keyed by the JSON itself: Python's bytes hash is cheaper than a digest, and a miss needs
    # the JSON anyway. Compiled from a private copy: the caller's dict may change, this may not.
    has_null = text == b"null" or any(null in text for null in _BARE_NULLS)
    return _compile(orjson.loads(text), check_formats), has_null


def _compile(schema: Any, check_formats: bool) -> Any:
    if check_formats:
        return ParameterValidator(schema, format_checker=ParameterValidator.FORMAT_CHECKER)
    return ParameterValidator(schema)


def parameter_errors(
    schema: Mapping[str, Any],
    value: Any,
    field: str,
    *,
    enforce_required: bool = True,
    schema_json: bytes | None = None,
) -> list[FieldError]:
    """Every way ``value`` breaks ``schema``, each at ``field`` plus the path inside the value.

    ``enforce_required=False`` suits a runtime's defaults, which are merged under a job's
    values and so need not be complete. ``schema_json`` is as for `compiled_validator`.
    """
    errors: list[FieldError] = []
    try:
        for error in compiled_validator(schema, schema_json=schema_json).iter_errors(value):
            if error.validator == "required" and not enforce_required:
                continue
            errors.extend(_field_errors(error, field))
    except RecursionError:
        # Admission refuses $ref loops; a runtime stored before that rule may still hold one.
        detail = "cannot be checked: the runtime's parameter schema refers to itself without end"
        return [fielderrors.invalid(field or "parameters", "object", detail)]
    except Unresolvable as error:
        detail = f"cannot be checked: the runtime's parameter schema has a broken $ref ({error})"
        return [fielderrors.invalid(field or "parameters", "object", detail)]
    # By field path, so a form can show them in order; a property's own errors stay together.
    return sorted(dict.fromkeys(errors), key=lambda e: e.field)


def _field_errors(error: ValidationError, field: str) -> list[FieldError]:
    where = _path(field, error.absolute_path)
    rule, expected, instance = error.validator, error.validator_value, error.instance
    if rule == "required":
        missing = [
            name for name in expected if isinstance(instance, Mapping) and name not in instance
        ]
        return [fielderrors.required(_path(where, [name])) for name in missing]
    if rule in ("additionalProperties", "unevaluatedProperties") and isinstance(instance, Mapping):
        return [
            fielderrors.forbidden(_path(where, [name]), "not a parameter this runtime accepts")
            for name in _unknown(error.schema, instance)
        ]
    if rule == "enum":
        return [fielderrors.not_supported(where, instance, list(expected))]
    if rule == "const":
        return [fielderrors.not_supported(where, instance, [expected])]
    if rule == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return [fielderrors.invalid(where, instance, f"must be of type {' or '.join(kinds)}")]
    if rule == "oneOf":
        return _one_of_errors(error, field, where)
    if rule == "uniqueItems":
        return [fielderrors.duplicate(where, instance)]
    if rule == "pattern" and (refused := regexes.problem(str(expected))) is not None:
        detail = f"cannot be checked: the runtime's pattern {expected} is refused ({refused})"
        return [fielderrors.invalid(where, instance, detail)]
    if rule in _RULES:
        return [fielderrors.invalid(where, instance, _RULES[str(rule)].format(expected))]
    return [fielderrors.invalid(where, instance, error.message)]


def _one_of_errors(error: ValidationError, field: str, where: str) -> list[FieldError]:
    # Forms told apart by a const discriminator ({"name": {"const": "adamw"}}): when the value
    # names exactly one form, that form's own errors say more than "matches none".
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context or []:
        # A `false` branch's error carries no schema path: it is no form to choose.
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        branches.setdefault(branch, []).append(sub)
    chosen = [errs for errs in branches.values() if not any(e.validator == "const" for e in errs)]
    if len(chosen) == 1 and len(branches) == len(error.validator_value):
        return [fe for sub in chosen[0] for fe in _field_errors(sub, field)]
    names = [
        str(prop["const"])
        for branch in error.validator_value
        if isinstance(branch, Mapping)
        for prop in (branch.get("properties") or {}).values()
        if isinstance(prop, Mapping) and "const" in prop
    ]
    detail = "must match exactly one of the allowed forms"
    if names:
        detail += f" ({', '.join(names)})"
    return [fielderrors.invalid(where, error.instance, detail)]


def _unknown(schema: Mapping[str, Any], instance: Mapping[str, Any]) -> list[str]:
    known = schema.get("properties") or {}
    patterns = list((schema.get("patternProperties") or {}).keys())
    return [
        name
        for name in instance
        if name not in known and not any(matches(p, name) for p in patterns)
    ]


def _path(field: str, parts: Iterable[str | int]) -> str:
    path = field
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.match(part):
            path += f".{part}" if path else part
        else:
            path += f"[{part}]"
    return path
