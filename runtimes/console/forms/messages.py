"""Field errors in plain words, for people filling in a form.

The API words a `FieldError` as kube-apiserver does (``Invalid value: 5: must be less than or
equal to 1``), which suits kubectl and logs. A form shows the error beside the field it names,
so the field and its value need not be repeated, and the rule is said as a sentence
(``Must be 1 or less``). The value is left out; the reason and the rule stay, so nothing the
API said is lost.
"""

from __future__ import annotations

import json
import re

from runtimes.apimachinery.fielderrors import FieldError

# jsonschema's rule texts (`catalog.parameters._RULES`) and the type names, as a person says them.
_RULES = (
    (re.compile(r"^must be greater than or equal to (.+)$"), "Must be {} or more"),
    (re.compile(r"^must be less than or equal to (.+)$"), "Must be {} or less"),
    (re.compile(r"^must be greater than (.+)$"), "Must be more than {}"),
    (re.compile(r"^must be less than (.+)$"), "Must be less than {}"),
    (re.compile(r"^must be at least (\d+) characters long$"), "Use at least {} characters"),
    (re.compile(r"^must be at most (\d+) characters long$"), "Use at most {} characters"),
    (re.compile(r"^must have at least (\d+) items$"), "Add at least {} items"),
    (re.compile(r"^must have at most (\d+) items$"), "Keep at most {} items"),
    (re.compile(r"^must match the regular expression (.+)$"), "Must match the pattern {}"),
    (re.compile(r"^must be a positive integer$"), "Enter a whole number of 1 or more"),
)
_TYPES = {
    "integer": "a whole number",
    "number": "a number",
    "string": "text",
    "boolean": "true or false",
    "object": "a group of settings",
    "array": "a list",
    "null": "empty",
}


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:]


def _after_value(rest: str) -> str:
    """What follows the value the API prints after ``Invalid value: `` (the rule), or ''."""
    if rest[:1] in ('"', "[", "{"):
        try:
            _, end = json.JSONDecoder().raw_decode(rest)
        except ValueError:
            return ""
        rest = rest[end:]
    else:
        # A number, true, false or null: no ": " inside it.
        rest = rest[rest.find(":") :] if ":" in rest else ""
    return rest[2:] if rest.startswith(": ") else ""


def _rule(detail: str) -> str:
    for pattern, text in _RULES:
        found = pattern.match(detail)
        if found:
            return text.format(*found.groups())
    typed = re.match(r"^must be of type (.+)$", detail)
    if typed:
        kinds = [_TYPES.get(k.strip(), k.strip()) for k in typed.group(1).split(" or ")]
        return "Enter " + " or ".join(kinds)
    return _sentence(detail)


def plain(error: FieldError) -> str:
    """The error as a sentence about the field it sits beside (its `fix` is shown apart)."""
    message = error.message
    if error.reason == "FieldValueRequired":
        detail = message.removeprefix("Required value").removeprefix(": ")
        return "This is required" + (f" ({detail})" if detail else "")
    if error.reason == "FieldValueNotSupported" and ": supported values: " in message:
        choices = message.split(": supported values: ", 1)[1]
        return f"Not one of the choices here: choose {choices}" if choices else "Not offered here"
    if error.reason == "FieldValueDuplicate":
        return "This value is already in the list: remove one of them"
    if error.reason == "FieldValueForbidden":
        detail = message.removeprefix("Forbidden").removeprefix(": ")
        return _sentence(detail) if detail else "Not allowed here"
    if error.reason == "FieldValueInvalid" and message.startswith("Invalid value: "):
        detail = _after_value(message.removeprefix("Invalid value: "))
        return _rule(detail) if detail else "This value is not valid"
    for prefix in ("Too long: ", "Too many: ", "Not found: "):
        if message.startswith(prefix):
            return _sentence(message.removeprefix(prefix))
    return _sentence(message)
