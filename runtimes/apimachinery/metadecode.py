"""Reading a custom resource's metadata as kube-apiserver's decoder does, into metav1.ObjectMeta.

kube decodes a custom resource's ``metadata`` into the Go struct before anything validates it
(apiextensions' ``GetObjectMetaWithOptions``): it writes the map back as JSON (keys sorted)
and unmarshals that into ``ObjectMeta``. A value of the wrong JSON type there (``"metadata":
5``, a label that is a number, labels as a list) is a decoding error, which the handlers answer
400 BadRequest ``<Kind> in version "<v>" cannot be handled as a <Kind>: <Go's json error>``,
not a 422. `type_error` finds that error and words it as Go's ``encoding/json`` does: the first
mismatch in the sorted JSON, named by the innermost struct and the field path
(``json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string``).
"""

from __future__ import annotations

from typing import Any

# A null inside a string map or list decodes, in Go, to the empty string: `type_error` leaves
# the value as kube would store it. The walk is iterative over what the schema below names and
# costs one pass over the metadata.

# Go types of ObjectMeta's fields and of the structs inside it, as Go names them in errors.
_STRING, _INT64, _BOOL, _TIME, _ANY = "string", "int64", "bool", "time", "any"
_OWNER_REFERENCE: dict[str, str] = {
    "apiVersion": _STRING,
    "kind": _STRING,
    "name": _STRING,
    "uid": "types.UID",
    "controller": _BOOL,
    "blockOwnerDeletion": _BOOL,
}
_MANAGED_FIELDS_ENTRY: dict[str, str] = {
    "manager": _STRING,
    "operation": "v1.ManagedFieldsOperationType",
    "apiVersion": _STRING,
    "time": _TIME,
    "fieldsType": _STRING,
    "fieldsV1": _ANY,  # FieldsV1 keeps any JSON as it is
    "subresource": _STRING,
}
_STRUCTS: dict[str, tuple[str, dict[str, str]]] = {
    "[]v1.OwnerReference": ("OwnerReference", _OWNER_REFERENCE),
    "[]v1.ManagedFieldsEntry": ("ManagedFieldsEntry", _MANAGED_FIELDS_ENTRY),
}
_OBJECT_META: dict[str, str] = {
    "name": _STRING,
    "generateName": _STRING,
    "namespace": _STRING,
    "selfLink": _STRING,
    "uid": "types.UID",
    "resourceVersion": _STRING,
    "generation": _INT64,
    "creationTimestamp": _TIME,
    "deletionTimestamp": _TIME,
    "deletionGracePeriodSeconds": _INT64,
    "labels": "map[string]string",
    "annotations": "map[string]string",
    "ownerReferences": "[]v1.OwnerReference",
    "finalizers": "[]string",
    "managedFields": "[]v1.ManagedFieldsEntry",
}
_STRING_KINDS = {_STRING, "types.UID", "v1.ManagedFieldsOperationType"}


def _json_kind(value: Any) -> str:
    """The JSON value's kind as Go's decoder names it in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "number"


def _mismatch(value: Any, go_type: str, struct: str, field: str) -> str:
    where = f"Go struct field {struct}.{field}" if struct else "Go value"
    return f"json: cannot unmarshal {value} into {where} of type {go_type}"


def _scalar_error(value: Any, go_type: str) -> str | None:
    """What Go says of a JSON scalar (or container) stored into a scalar of ``go_type``; the
    words before "into", or None when it fits."""
    if value is None or go_type == _ANY:
        return None
    kind = _json_kind(value)
    if go_type in _STRING_KINDS:
        return None if kind == "string" else kind
    if go_type == _BOOL:
        return None if kind == "bool" else kind
    # int64: a whole number in range fits (Go reads 1.0 written back as 1); 1.5 does not.
    if kind != "number":
        return kind
    if isinstance(value, float):
        if not value.is_integer():
            return f"number {value!r}"
        value = int(value)
    return None if -(2**63) <= value < 2**63 else f"number {value}"


def type_error(meta: Any) -> str | None:
    """Go's error for the first value of ``meta`` that does not fit ObjectMeta, or None.

    Go keeps the first type error and reads on, except that a bad timestamp stops it at once
    (metav1.Time's own decoder fails), which then wins. Null string-map values and list
    entries are made "" in place, as Go decodes them, when there is no error.
    """
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return _mismatch(_json_kind(meta), "v1.ObjectMeta", "", "")
    first: str | None = None
    blanks: list[tuple[Any, Any]] = []
    for key in sorted(meta):
        go_type = _OBJECT_META.get(key)
        if go_type is None:
            continue  # unknown fields are strict decoding's to report
        problem = _field_error(meta[key], go_type, "ObjectMeta", key, blanks)
        if problem is None:
            continue
        if problem[1]:  # fatal
            return problem[0]
        first = first or problem[0]
    if first is None:
        for container, index in blanks:
            container[index] = ""
    return first


def _field_error(
    value: Any, go_type: str, struct: str, field: str, blanks: list[tuple[Any, Any]]
) -> tuple[str, bool] | None:
    """The error for one field and whether it stops the decoder, or None."""
    if value is None:
        return None
    if go_type == _TIME:
        if isinstance(value, str):
            return None
        # metav1.Time decodes a string itself; Go's error is given the field's context.
        return _mismatch(_json_kind(value), "string", struct, field), True
    if go_type == "map[string]string":
        if not isinstance(value, dict):
            return _mismatch(_json_kind(value), go_type, struct, field), False
        first = None
        for key in sorted(value):
            item = value[key]
            if item is None:
                blanks.append((value, key))
            elif first is None and (kind := _scalar_error(item, _STRING)):
                first = _mismatch(kind, _STRING, struct, field)
        return (first, False) if first else None
    if go_type == "[]string":
        if not isinstance(value, list):
            return _mismatch(_json_kind(value), go_type, struct, field), False
        for index, item in enumerate(value):
            if item is None:
                blanks.append((value, index))
            elif kind := _scalar_error(item, _STRING):
                return _mismatch(kind, _STRING, struct, field), False
        return None
    if go_type in _STRUCTS:
        if not isinstance(value, list):
            return _mismatch(_json_kind(value), go_type, struct, field), False
        name, fields = _STRUCTS[go_type]
        first_error: tuple[str, bool] | None = None
        for item in value:
            if item is None:
                continue
            if not isinstance(item, dict):
                first_error = first_error or (
                    _mismatch(_json_kind(item), go_type[2:], struct, field),
                    False,
                )
                continue
            for key in sorted(item):
                inner = fields.get(key)
                if inner is None:
                    continue
                problem = _field_error(item[key], inner, name, f"{field}.{key}", blanks)
                if problem is not None and problem[1]:
                    return problem
                first_error = first_error or problem
        return first_error
    kind = _scalar_error(value, go_type)
    return (_mismatch(kind, go_type, struct, field), False) if kind else None
