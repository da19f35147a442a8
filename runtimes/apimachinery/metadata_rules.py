"""Object metadata rules, worded exactly as apimachinery words them.

Names are DNS-1123 subdomains, projects (namespaces) and sidecars DNS-1123 labels; label keys,
annotation keys and finalizers are qualified names. The messages match
``k8s.io/apimachinery/pkg/util/validation`` so that kubectl users see familiar text.
"""

from __future__ import annotations

import re
from typing import Any

from runtimes.apimachinery.fielderrors import FieldError, invalid, required, too_long

# Sizes are bounded as kube bounds them, plus one bound of ours. Annotations may total 256 KiB
# (keys and values in UTF-8 bytes: apimachinery's ``TotalAnnotationSizeLimitB``). Labels are
# limited by kube only per key (a 63-character name, a 253-character prefix) and per value (63
# characters); we also cap their total at 64 KiB, counted the same way, so that a label map cannot
# make every write, list and watch match slow (about 1,000 labels of a typical size). A map over
# its limit gets one ``Too long`` cause and no per-entry causes, so the Status stays small whatever
# the map holds. Every check here is linear in the size of its input.

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
LABEL_VALUE_MAX_LENGTH = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB
TOTAL_LABEL_SIZE_LIMIT = 64 * 1024  # ours: kube bounds each label, not their total

_DNS1123_LABEL = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)

_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError, including its quirk of a double space before 'or'."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for index, example in enumerate(examples):
        if index > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def dns1123_label_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL.fullmatch(value):
        errors.append(regex_error(_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(regex_error(_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: an optional DNS subdomain prefix and '/', then a short name."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errors.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(
            regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def _shown(value: Any) -> Any:
    """Objects and arrays are named by type: they may be large, or hold keys JSON cannot render."""
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else value


def validate_name(name: Any, path: str = "metadata.name") -> list[FieldError]:
    if not isinstance(name, str):
        return [invalid(path, _shown(name), "must be a string")]
    return [invalid(path, name, message) for message in dns1123_subdomain_errors(name)]


def validate_generate_name(prefix: Any, path: str = "metadata.generateName") -> list[FieldError]:
    """A prefix is valid when it would be a valid name once random characters follow it."""
    if not isinstance(prefix, str):
        return [invalid(path, _shown(prefix), "must be a string")]
    # apimachinery's maskTrailingDash, quirk included: a trailing dash (which the random
    # suffix will follow) and the character before it become one "a".
    masked = prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    return [invalid(path, prefix, message) for message in dns1123_subdomain_errors(masked)]


def validate_namespace(namespace: Any, path: str = "metadata.namespace") -> list[FieldError]:
    if not isinstance(namespace, str):
        return [invalid(path, _shown(namespace), "must be a string")]
    return [invalid(path, namespace, message) for message in dns1123_label_errors(namespace)]


def validate_dns_label(value: Any, path: str) -> list[FieldError]:
    """For sidecar names and other single-label names."""
    return validate_namespace(value, path)


def _string_map(value: Any, path: str) -> tuple[dict[str, str], list[FieldError]]:
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [invalid(path, _shown(value), "must be a map of string keys to string values")]
    errors = [
        invalid(path, key, "keys must be strings")
        if not isinstance(key, str)
        else invalid(f"{path}[{key}]", _shown(item), "must be a string")
        for key, item in value.items()
        if not isinstance(key, str) or not isinstance(item, str)
    ]
    pairs = {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
    return pairs, errors


def _total_size(value: Any) -> int:
    """Bytes of a map's keys and string values in UTF-8, as kube counts (``len`` of Go strings)."""
    if not isinstance(value, dict):
        return 0
    return sum(_utf8_length(k) + _utf8_length(v) for k, v in value.items())


def _utf8_length(text: Any) -> int:
    # surrogatepass: a lone surrogate (which a YAML body can carry) is counted, not a 500.
    return len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0


def validate_labels(labels: Any, path: str = "metadata.labels") -> list[FieldError]:
    if _total_size(labels) > TOTAL_LABEL_SIZE_LIMIT:
        return [too_long(path, TOTAL_LABEL_SIZE_LIMIT)]
    pairs, errors = _string_map(labels, path)
    for key, value in pairs.items():
        errors.extend(invalid(path, key, message) for message in qualified_name_errors(key))
        errors.extend(invalid(path, value, message) for message in label_value_errors(value))
    return errors


def validate_annotations(annotations: Any, path: str = "metadata.annotations") -> list[FieldError]:
    if _total_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT:
        return [too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT)]
    pairs, errors = _string_map(annotations, path)
    for key in pairs:
        # Annotation keys are qualified names in which case does not matter.
        errors.extend(invalid(path, key, m) for m in qualified_name_errors(key.lower()))
    return errors


def size_errors(meta: Any, path: str = "metadata") -> list[FieldError]:
    """The label and annotation size bounds alone, for a caller about to do work proportional
    to them (server-side apply merges and tracks every label before the store validates)."""
    if not isinstance(meta, dict):
        return []
    errors: list[FieldError] = []
    if _total_size(meta.get("labels")) > TOTAL_LABEL_SIZE_LIMIT:
        errors.append(too_long(f"{path}.labels", TOTAL_LABEL_SIZE_LIMIT))
    if _total_size(meta.get("annotations")) > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(too_long(f"{path}.annotations", TOTAL_ANNOTATION_SIZE_LIMIT))
    return errors


def validate_finalizers(finalizers: Any, path: str = "metadata.finalizers") -> list[FieldError]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [invalid(path, _shown(finalizers), "must be a list of strings")]
    errors: list[FieldError] = []
    for index, finalizer in enumerate(finalizers):
        if not isinstance(finalizer, str):
            errors.append(invalid(f"{path}[{index}]", _shown(finalizer), "must be a string"))
            continue
        errors.extend(invalid(path, finalizer, m) for m in qualified_name_errors(finalizer))
    # kube's ValidateFinalizers: the collector cannot both orphan and delete the dependents.
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errors.append(
            invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set")
        )
    return errors


# apimachinery's BannedOwners: an Event may own nothing (events come and go by the thousand).
BANNED_OWNERS = {("v1", "Event")}


def validate_owner_references(
    owners: Any, path: str = "metadata.ownerReferences"
) -> list[FieldError]:
    """kube's ValidateOwnerReferences: apiVersion (with a version), kind, name and uid are
    required in each, a core Event may not own anything, and at most one may be the
    controller."""
    if owners is None:
        return []
    if not isinstance(owners, list):
        return [invalid(path, _shown(owners), "must be a list")]
    errors: list[FieldError] = []
    controller = ""
    for index, owner in enumerate(owners):
        if not isinstance(owner, dict):
            errors.append(invalid(f"{path}[{index}]", _shown(owner), "must be an object"))
            continue
        # Typed fields, as kube decodes them (a uid that is an object would be a 400 there).
        mistyped = [
            invalid(f"{path}[{index}].{key}", _shown(owner[key]), f"must be {kind}")
            for key, kind, ok in (
                *((k, "a string", str) for k in ("apiVersion", "kind", "name", "uid")),
                *((k, "a boolean", bool) for k in ("controller", "blockOwnerDeletion")),
            )
            if owner.get(key) is not None and not isinstance(owner[key], ok)
        ]
        if mistyped:
            errors.extend(mistyped)
            continue
        api_version = str(owner.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            errors.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not owner.get(key):
                errors.append(
                    invalid(f"{path}.{key}", str(owner.get(key) or ""), f"{key} must not be empty")
                )
        kind = str(owner.get("kind") or "")
        if (api_version, kind) in BANNED_OWNERS:
            group, _, version = api_version.rpartition("/")
            errors.append(
                invalid(
                    path, owner, f"{group}/{version}, Kind={kind} is disallowed from being an owner"
                )
            )
        if owner.get("controller") is True:
            this = f"{owner.get('kind')}/{owner.get('name')}"
            if controller:
                errors.append(
                    invalid(
                        path,
                        _shown(owners),
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {this}",
                    )
                )
            else:
                controller = this
    return errors


# Finalizers kube itself defines: never warned about (apiextensions' standardFinalizers).
STANDARD_FINALIZERS = frozenset({"orphan", "foregroundDeletion", "kubernetes"})


def finalizer_warnings(
    finalizers: Any, old: Any = None, path: str = "metadata.finalizers"
) -> list[str]:
    """The warnings kube-apiserver gives a custom resource's write for the finalizers it adds
    (those not in `old`), in name order (apiextensions' validateKubeFinalizerName): a name
    without a path, other than kube's own, should be domain-qualified. Names that are not
    qualified names at all are validation errors, so they are not warned about here."""
    if not isinstance(finalizers, list):
        return []
    before = {f for f in old if isinstance(f, str)} if isinstance(old, list) else set()
    added = sorted({f for f in finalizers if isinstance(f, str)} - before)
    warnings = []
    for finalizer in added:
        if "/" in finalizer or finalizer in STANDARD_FINALIZERS:
            continue
        if qualified_name_errors(finalizer):
            continue
        prefer = (
            "prefer a domain-qualified finalizer name including a path (/)"
            if "." in finalizer
            else "prefer a domain-qualified finalizer name"
        )
        warnings.append(
            f'{path}: "{finalizer}": {prefer} to avoid accidental conflicts with other '
            "finalizer writers"
        )
    return warnings


def validate_object_meta(meta: Any, path: str = "metadata") -> list[FieldError]:
    """Every client-writable ObjectMeta rule: name (or generateName), namespace, labels,
    annotations and finalizers."""
    if not isinstance(meta, dict):
        return [required(f"{path}.name", "name or generateName is required")]
    errors: list[FieldError] = []
    name, generate_name = meta.get("name"), meta.get("generateName")
    if generate_name:
        errors.extend(validate_generate_name(generate_name, f"{path}.generateName"))
    if name in (None, ""):
        if not generate_name:
            errors.append(required(f"{path}.name", "name or generateName is required"))
    else:
        errors.extend(validate_name(name, f"{path}.name"))
    if meta.get("namespace") not in (None, ""):
        errors.extend(validate_namespace(meta["namespace"], f"{path}.namespace"))
    errors.extend(validate_labels(meta.get("labels"), f"{path}.labels"))
    errors.extend(validate_annotations(meta.get("annotations"), f"{path}.annotations"))
    errors.extend(validate_finalizers(meta.get("finalizers"), f"{path}.finalizers"))
    return errors
