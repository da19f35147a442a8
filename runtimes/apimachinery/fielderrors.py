"""Field errors: one problem with one field, as Kubernetes reports it.

Mirrors apimachinery's ``util/validation/field`` so that messages read exactly like
kube-apiserver's (``spec.launcher: Unsupported value: "Slurm": supported values: ...``).
Validators collect these into a list; the store turns a non-empty list into one 422 ``Invalid``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import orjson


@dataclass(frozen=True)
class FieldError:
    field: str  # the dotted path, e.g. spec.presets[2].resources.gpu.count
    reason: str  # a Kubernetes CauseType, e.g. FieldValueInvalid
    message: str  # the body without the field, e.g. 'Invalid value: 3: must be 1, 2, 4 or 8'
    # How to put it right, when the message alone does not say (a Status cause has no such
    # field: `errors.invalid` carries it in the Status's `fix`). Not part of the error's identity.
    fix: str = dataclass_field(default="", compare=False)

    def as_cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def render_value(value: Any) -> str:
    """Formats a value as apimachinery does: strings quoted, numbers bare, the rest as JSON."""
    if isinstance(value, bool) or value is None:
        return orjson.dumps(value).decode()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        # orjson refuses integers past 64 bits (a YAML body may hold one); the standard
        # library writes them, within the body's depth bound.
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _with_detail(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(field, "FieldValueRequired", _with_detail("Required value", detail))


def invalid(field: str, value: Any, detail: str = "", fix: str = "") -> FieldError:
    return FieldError(
        field,
        "FieldValueInvalid",
        _with_detail(f"Invalid value: {render_value(value)}", detail),
        fix,
    )


def type_invalid(field: str, value: Any, detail: str = "", fix: str = "") -> FieldError:
    """kube's TypeInvalid: worded as Invalid, with its own reason (a value of the wrong JSON
    type, e.g. from a custom resource's schema)."""
    return FieldError(
        field,
        "FieldValueTypeInvalid",
        _with_detail(f"Invalid value: {render_value(value)}", detail),
        fix,
    )


def not_supported(field: str, value: Any, supported: list[str]) -> FieldError:
    values = ", ".join(render_value(v) for v in supported)
    return FieldError(
        field,
        "FieldValueNotSupported",
        f"Unsupported value: {render_value(value)}: supported values: {values}",
    )


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(field, "FieldValueDuplicate", f"Duplicate value: {render_value(value)}")


def not_found(field: str, value: Any) -> FieldError:
    return FieldError(field, "FieldValueNotFound", f"Not found: {render_value(value)}")


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field, "FieldValueForbidden", _with_detail("Forbidden", detail))


def too_long(field: str, max_length: int, actual: int | None = None) -> FieldError:
    if actual is None:
        body = f"Too long: may not be more than {max_length} bytes"
    else:
        body = f"Too long: may not be more than {max_length} bytes (got {actual})"
    return FieldError(field, "FieldValueTooLong", body)


def too_many(field: str, actual: int, limit: int) -> FieldError:
    return FieldError(
        field, "FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items"
    )
