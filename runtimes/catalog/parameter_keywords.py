"""The Draft 2020-12 validator for parameter schemas, with every regular expression on RE2.

jsonschema matches schema regexes with Python's backtracking ``re`` in four places: the
``pattern`` keyword, ``patternProperties``, and the property names ``additionalProperties`` and
``unevaluatedProperties`` consider already matched by a ``patternProperties`` name. A schema is
user input, so each of these is replaced here by the same keyword over
`runtimes.apimachinery.regexes` (RE2, linear time); the ``regex`` format is checked by compiling
under RE2 too. Everything else is jsonschema's own Draft 2020-12 validator.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError

from runtimes.apimachinery import regexes
from runtimes.catalog import parameter_formats

# A pattern RE2 cannot run (admission refuses them, but a runtime stored before that rule may hold
# one) fails closed: ``pattern`` reports it as an error of the value, and a ``patternProperties``
# name matches nothing.

Validator = Any  # jsonschema's validator protocol, as its keyword functions receive it


def matches(pattern: str, text: str) -> bool:
    """``pattern`` found in ``text``; a pattern RE2 cannot run matches nothing."""
    try:
        return regexes.search(pattern, text)
    except regexes.UnsupportedPattern:
        return False


def pattern(
    validator: Validator, patrn: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        found = regexes.search(patrn, instance)
    except regexes.UnsupportedPattern as error:
        yield ValidationError(f"{patrn!r} cannot be checked: {error}")
        return
    if not found:
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def pattern_properties(
    validator: Validator, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for key, value in instance.items():
            if matches(patrn, key):
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        name
        for name in instance
        if name not in properties and not any(matches(p, name) for p in patterns)
    ]


def _extras_msg(extras: list[Any]) -> str:
    verb = "was" if len(extras) == 1 else "were"
    return f"{', '.join(repr(extra) for extra in extras)} {verb}"


def additional_properties(
    validator: Validator, extra_schema: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            listed = _extras_msg(sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


def _is_valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Validator, instance: Any, schema: Any) -> list[str]:
    """The properties some keyword of ``schema`` evaluates (jsonschema's own walk, MIT licence,
    with its ``re.search`` replaced by `matches`)."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for ref_keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(ref_keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            keys.extend(
                _evaluated_keys(
                    validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                    instance,
                    resolved.contents,
                )
            )
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is None:
            continue
        keys += (
            key for key, value in instance.items() if _is_valid(validator.descend(value, subschema))
        )
    if "patternProperties" in schema:
        for name in instance:
            for patrn in schema["patternProperties"]:
                if matches(patrn, name):
                    keys.append(name)
    if "dependentSchemas" in schema:
        for name, subschema in schema["dependentSchemas"].items():
            if name in instance:
                keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _is_valid(validator.descend(instance, subschema)):
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys


def unevaluated_properties(
    validator: Validator, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failing = []
    for name in instance:
        if name not in evaluated:
            for _ in validator.descend(instance[name], unevaluated, path=name, schema_path=name):
                failing.append(name)
    if failing:
        if unevaluated is False:
            extras = _extras_msg(sorted(failing, key=str))
            yield ValidationError(f"Unevaluated properties are not allowed ({extras} unexpected)")
        else:
            yield ValidationError(
                "Unevaluated properties are not valid under the given schema "
                f"({_extras_msg(failing)} unevaluated and invalid)"
            )


def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        regexes.compile(instance)
    return True


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=regexes.UnsupportedPattern)(_is_regex)
    checker.checks("time")(parameter_formats.is_time)
    checker.checks("date")(parameter_formats.is_date)
    checker.checks("date-time")(parameter_formats.is_date_time)
    checker.checks("email")(parameter_formats.is_email)
    return checker


# Draft 2020-12's format checks, with ``regex`` meaning "RE2 can run it" and time, date-time and
# email as their RFCs have them (`parameter_formats`).
FORMAT_CHECKER = _format_checker()

ParameterValidator = validators.extend(
    Draft202012Validator,
    {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
        "unevaluatedProperties": unevaluated_properties,
    },
    format_checker=FORMAT_CHECKER,
)
