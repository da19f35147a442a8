"""Turns a PATCH body into the requested object, by media type, and keeps managedFields.

Merge patch (RFC 7386) and JSON patch (RFC 6902) are applied to the current object; server-side
apply merges the applied configuration by field ownership. Each result is held to the body's
`bounds` (depth, nodes) before validation walks it. Every write records an `Update` (or
`Apply`) entry for its field manager, as kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from runtimes.api import media
from runtimes.apimachinery import (
    bounds,
    errors,
    managedfields,
    metadata_rules,
    metadecode,
    patches,
)
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.objectmeta import now_timestamp
from runtimes.registry import fieldmanager
from runtimes.registry.resources import ResourceType


def manager_name(field_manager: str, user_agent: str) -> str:
    """kube-apiserver falls back to the user agent's first segment (`kubectl`, `python`)."""
    if field_manager:
        return field_manager
    return (user_agent.split("/", 1)[0] or "unknown")[:128]


def patch_change(rt: ResourceType, content_type: str, body: Any, name: str) -> Callable[[Obj], Obj]:
    def change(current: Obj) -> Obj:
        try:
            if content_type == media.MERGE_PATCH:
                if not isinstance(body, dict):
                    raise patches.PatchError("a merge patch must be a JSON object")
                return _bounded(patches.merge_patch(current, body))
            if content_type == media.JSON_PATCH:
                if not isinstance(body, list):  # kube's decoder refuses it: 400
                    raise patches.PatchError(
                        f"json: cannot unmarshal {_json_type(body)} into Go value of type "
                        "jsonpatch.Patch",
                        malformed=True,
                    )
                result = patches.json_patch(current, body)
                if not isinstance(result, dict):
                    raise patches.PatchError("the patched document is not an object")
                return _bounded(result)
        except bounds.BoundExceeded as exc:
            raise exc.api_error() from None
        except patches.PatchError as exc:
            if exc.malformed:
                raise errors.bad_request(str(exc)) from exc
            # kube answers a failed JSON-patch operation with a generic 422: "the server
            # rejected our request due to an error in our request" and `"details": {}`, which
            # kubectl prints as a bare "The request is invalid". Ours keeps kube's code and
            # reason, names the operation that failed and leaves details out, so kubectl
            # prints the message (docs/kube-compatibility.md).
            raise errors.ApiError(
                "Invalid",
                str(exc),
                None,
                fix="Re-read the object and build the patch against its current content.",
            ) from exc
        raise AssertionError(content_type)

    return change


def patch_repeated(content_type: str, repeated: list[str]) -> list[str]:
    """The patch body's repeated keys as kube's strict decoding of a patch names them."""
    if content_type == media.JSON_PATCH:
        return [f"json patch {problem}" for problem in repeated]
    return list(repeated)


def apply_decoding(repeated: list[str], field_validation: str) -> list[str]:
    """An apply patch's repeated keys: kube refuses them under Strict before anything else
    (400), and warns of them under Warn; the warnings are returned."""
    if not repeated or field_validation == "Ignore":
        return []
    problems = [f"error converting YAML to JSON: {problem}" for problem in repeated]
    if field_validation == "Strict":
        raise errors.bad_request(
            "error strict decoding patch: " + ", ".join(problems),
            fix="Give each field once in the applied manifest.",
        )
    return problems


def _patched_json(patched: Obj) -> str:
    # As kube shows a patched object: compact JSON with its keys sorted (Go maps).
    return orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()


def decode_patched_metadata(patched: Obj) -> None:
    """A patched object whose metadata does not decode into ObjectMeta: kube's 422 about the
    patch, with Go's error (`metadecode`)."""
    problem = metadecode.type_error(patched.get("metadata"))
    if problem:
        raise errors.patch_invalid(
            _patched_json(patched),
            problem,
            fix="The patch leaves metadata with a value of the wrong type: labels and "
            "annotations map strings to strings, finalizers are a list of strings (`kubectl "
            "explain tr.metadata`).",
        )


def strict_patch_error(patched: Obj, problems: list[str]) -> errors.ApiError:
    """fieldValidation=Strict refused a patch or its result: kube answers 422 about the
    patch, every repeated key and unknown field named."""
    return errors.patch_invalid(
        _patched_json(patched),
        "strict decoding error: " + ", ".join(problems),
        fix="Give each field once and only fields the schema knows (`kubectl explain tr "
        "--recursive`), or send fieldValidation=Warn to have unknown fields dropped with a "
        "warning.",
    )


def _json_type(value: Any) -> str:
    """The JSON type's name as Go's encoding/json words it in an unmarshal error."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else "null"


def _bounded(patched: Obj) -> Obj:
    # A patch's result is checked like a body before anything walks it: a JSON patch can nest
    # one value inside another, and validation recurses.
    bounds.check(patched, "the patched object")
    return patched


def recorder(rt: ResourceType, manager: str, subresource: str) -> Callable[[Obj | None, Obj], Obj]:
    """Records the write in metadata.managedFields once the store has prepared the new object."""
    return fieldmanager.recorder(rt, manager, subresource)


def apply_change(
    rt: ResourceType, body: Any, manager: str, force: bool, name: str, subresource: str
) -> tuple[Callable[[Obj], Obj], Callable[[Obj | None, Obj], Obj]]:
    """Server-side apply: merges the applied config into the live object by ownership."""
    if not isinstance(body, dict):
        raise errors.bad_request("an apply patch must be one object (YAML or JSON)")
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("managedFields"), list):
        # kube's structured-merge manager: ownership is the server's to compute on apply.
        raise errors.bad_request(
            "metadata.managedFields must be nil",
            fix="Leave metadata.managedFields out of the applied manifest (`kubectl get -o yaml` "
            "output includes them; strip them, or use --show-managed-fields=false).",
        )
    # Refused before the merge, which tracks every label and annotation the body carries.
    oversized = metadata_rules.size_errors(body.get("metadata"))
    if oversized:
        raise errors.invalid(rt.kind, rt.group, name, oversized)
    owned: dict[str, Any] = {}

    def change(current: Obj) -> Obj:
        # An empty current object means "create": nothing is live, so nobody owns anything yet.
        try:
            merged, entries = managedfields.apply(
                current or None,
                body,
                manager,
                force,
                current.get("metadata", {}).get("managedFields") or [],
                rt.api_version,
                now_timestamp(),
                list_map_keys=rt.merge_types,
                subresource=subresource,
                default=rt.strategy.default,
            )
        except managedfields.ApplyConflict as exc:
            raise conflict_error(exc) from exc
        try:
            bounds.check(merged, "the applied object")
        except bounds.BoundExceeded as exc:
            raise exc.api_error() from None
        owned["entries"] = entries
        return merged

    def record(old: Obj | None, new: Obj) -> Obj:
        if "entries" in owned:
            fieldmanager.set_entries(new, owned["entries"])
        return new

    return change, record


def conflict_error(exc: managedfields.ApplyConflict) -> errors.ApiError:
    # kube's NewApplyConflict: the details hold the causes only, no name, group or kind.
    return errors.ApiError(
        "Conflict",
        exc.message,
        {},
        causes=[FieldError(c["field"], c["reason"], c["message"]) for c in exc.causes],
        fix="Another field manager owns these fields: leave them out of your manifest, or take "
        "ownership with `kubectl apply --server-side --force-conflicts`.",
    )
