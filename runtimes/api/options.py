"""Query and body options of writes: dryRun, fieldValidation, fieldManager, force, DeleteOptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from django.http import QueryDict

from runtimes.apimachinery import errors
from runtimes.apimachinery.fielderrors import FieldError, invalid, not_supported, too_long
from runtimes.apimachinery.meta import PRECONDITION_FIELDS

FIELD_VALIDATION = ["Ignore", "Strict", "Warn"]


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool
    field_validation: str
    field_manager: str
    force: bool | None


def _options_invalid(kind: str, causes: list[FieldError]) -> errors.ApiError:
    return errors.invalid(kind, "meta.k8s.io", "", causes)


def _dry_run(values: list[str], path: str = "dryRun") -> tuple[bool, list[FieldError]]:
    if all(v == "All" for v in values):
        return bool(values), []
    # kube's ValidateDryRun refuses the whole list at once, shown as Go's %#v of a []string.
    shown = ", ".join(orjson.dumps(v).decode() for v in values)
    message = f'Unsupported value: []string{{{shown}}}: supported values: "All"'
    return False, [FieldError(path, "FieldValueNotSupported", message)]


def write_options(
    query: QueryDict, kind: str = "CreateOptions", apply: bool = False
) -> WriteOptions:
    problems: list[FieldError] = []
    dry_run, dry_problems = _dry_run(query.getlist("dryRun"))
    problems += dry_problems
    field_validation = query.get("fieldValidation") or "Warn"
    if field_validation not in FIELD_VALIDATION:
        problems.append(not_supported("fieldValidation", field_validation, FIELD_VALIDATION))
    manager = query.get("fieldManager", "")
    if len(manager) > 128:
        problems.append(too_long("fieldManager", 128))
    elif manager and not manager.isprintable():
        # kube's ValidateFieldManager names the first such rune as Go's %#U, at its byte offset.
        index, char = next((i, c) for i, c in enumerate(manager) if not c.isprintable())
        offset = len(manager[:index].encode())
        problems.append(
            invalid(
                "fieldManager",
                manager,
                f"invalid character U+{ord(char):04X} (at position {offset})",
            )
        )
    force: bool | None = None
    if "force" in query:
        raw = query.get("force", "")
        if raw not in {"true", "false", "1", "0", ""}:
            problems.append(invalid("force", raw, "must be true or false"))
        force = raw in {"true", "1"}
        if not apply:
            problems.append(
                FieldError(
                    "force",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified for non-apply patch",
                )
            )
    if apply and not manager:
        problems.append(
            FieldError(
                "fieldManager", "FieldValueRequired", "Required value: is required for apply patch"
            )
        )
    if problems:
        raise _options_invalid(kind, problems)
    return WriteOptions(dry_run, field_validation, manager, force)


@dataclass(frozen=True)
class DeleteOptions:
    dry_run: bool
    uid: str | None
    resource_version: str | None
    propagation: str | None = None
    orphan_dependents: bool | None = None


def _orphan_dependents(body: dict[str, Any], query: QueryDict) -> bool | None:
    """A JSON boolean in the body; in the query, kube's conversion of a string to a bool:
    only "false" and "0" are false."""
    if "orphanDependents" in body:
        value = body["orphanDependents"]
        _expect(value is None or isinstance(value, bool), "orphanDependents", "bool")
        return value if isinstance(value, bool) else None
    raw = query.get("orphanDependents")
    if raw is None:
        return None
    return raw.lower() not in ("false", "0")


def _expect(ok: bool, field: str, go_type: str) -> None:
    """A body field of the wrong JSON type is a decoding error (400), as in kube-apiserver."""
    if not ok:
        raise errors.bad_request(
            f"json: cannot unmarshal into Go struct field DeleteOptions.{field} of type {go_type}"
        )


def delete_options(query: QueryDict, body: Any) -> DeleteOptions:
    """DeleteOptions arrive as a JSON body from kubectl, and may also come as query params."""
    body = body if isinstance(body, dict) else {}
    if body.get("kind") not in (None, "DeleteOptions"):
        raise errors.bad_request(f"the body must be DeleteOptions, not {body.get('kind')}")
    values = body.get("dryRun") or query.getlist("dryRun")
    if isinstance(values, str):
        values = [values]
    _expect(
        isinstance(values, list) and all(isinstance(v, str) for v in values), "dryRun", "[]string"
    )
    dry_run, problems = _dry_run(list(values))
    policy = body.get("propagationPolicy") or query.get("propagationPolicy")
    allowed = ["Background", "Foreground", "Orphan"]
    if policy is not None and policy not in allowed:
        problems.append(not_supported("propagationPolicy", policy, allowed))
    orphan = _orphan_dependents(body, query)
    if orphan is not None and policy is not None:
        problems.append(
            invalid(
                "propagationPolicy",
                policy,
                "orphanDependents and deletionPropagation cannot be both set",
            )
        )
    grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    if grace is not None:
        try:
            if int(grace) < 0:
                raise ValueError
        except (TypeError, ValueError):
            problems.append(invalid("gracePeriodSeconds", grace, "must be a non-negative integer"))
    if problems:
        raise _options_invalid("DeleteOptions", problems)
    pre = body.get("preconditions") or {}
    _expect(isinstance(pre, dict), "preconditions", "Preconditions")
    for key in PRECONDITION_FIELDS:
        _expect(isinstance(pre.get(key, ""), str), f"preconditions.{key}", "string")
    return DeleteOptions(
        dry_run,
        pre.get("uid") or query.get("preconditions.uid"),
        pre.get("resourceVersion") or query.get("preconditions.resourceVersion"),
        policy,
        orphan,
    )
