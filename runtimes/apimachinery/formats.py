"""String formats named by the resource schema, each with its check and its regex.

The schema says *which* format a field has (``image-ref``, ``quantity``, ``duration`` …); this
module says what the format means. The structural validator calls `check_format`, and the
OpenAPI generator publishes `FORMAT_PATTERNS` so clients see the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from runtimes.apimachinery import metadata_rules
from runtimes.apimachinery.quantities import (
    DURATION_HINT,
    DURATION_PATTERN,
    QUANTITY_HINT,
    QUANTITY_PATTERN,
    parse_duration,
    parse_quantity,
)

# distribution/reference's grammar, restricted to sha256 digests in lowercase hex.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_REPOSITORY = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
IMAGE_REF_PATTERN = rf"^{_REPOSITORY}(?::[\w][\w.-]{{0,127}})?@sha256:[a-f0-9]{{64}}$"
_IMAGE_REF = re.compile(IMAGE_REF_PATTERN)
_REPOSITORY_MAX_LENGTH = 255
DIGEST_PATTERN = r"^sha256:[a-f0-9]{64}$"
_DIGEST = re.compile(DIGEST_PATTERN)

_HF_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
HF_REPO_PATTERN = rf"^{_HF_PART}/{_HF_PART}$"
_HF_REPO = re.compile(HF_REPO_PATTERN)
_HF_PART_MAX_LENGTH = 96

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
_ENV_NAME = re.compile(ENV_NAME_PATTERN)
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
_SECRET_KEY = re.compile(SECRET_KEY_PATTERN)
# Output names and quantization schemes are short tokens that end up in file names and URLs.
TOKEN_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"
_TOKEN = re.compile(TOKEN_PATTERN)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
_CONDITION_REASON = re.compile(CONDITION_REASON_PATTERN)
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_PATH_MAX_LENGTH = 4096


def _image_ref(value: str) -> str | None:
    if "@" not in value:
        return (
            "must be pinned by digest: repository[:tag]@sha256:<64 lowercase hex digits>, "
            "e.g. 'registry.nodus.dev/trainers/sft@sha256:…'"
        )
    if not _IMAGE_REF.fullmatch(value):
        return (
            "must be a digest-pinned image reference repository[:tag]@sha256:<64 lowercase hex "
            "digits>, with a lowercase repository path"
        )
    repository = value.split("@", 1)[0]
    last_component = repository.rsplit("/", 1)[-1]
    if ":" in last_component:  # drop the tag; a ':' before the last '/' is a registry port
        repository = repository[: len(repository) - len(last_component.split(":", 1)[1]) - 1]
    if len(repository) > _REPOSITORY_MAX_LENGTH:
        return f"the repository name must be at most {_REPOSITORY_MAX_LENGTH} characters"
    return None


def _digest(value: str) -> str | None:
    return None if _DIGEST.fullmatch(value) else "must be sha256:<64 lowercase hex digits>"


def _hf_repo(value: str) -> str | None:
    hint = "must be a Hugging Face repository id owner/name, e.g. 'Qwen/Qwen3-0.6B'"
    if not _HF_REPO.fullmatch(value) or "--" in value or ".." in value:
        return hint
    if any(len(part) > _HF_PART_MAX_LENGTH for part in value.split("/")):
        return f"owner and name must each be at most {_HF_PART_MAX_LENGTH} characters"
    return None


def _absolute_path(value: str) -> str | None:
    if not value.startswith("/"):
        return "must be an absolute path (starting with '/')"
    if "\x00" in value or ".." in value.split("/"):
        return "must not contain '..' segments or NUL characters"
    if len(value) > _PATH_MAX_LENGTH:
        return f"must be at most {_PATH_MAX_LENGTH} characters"
    return None


def _env_name(value: str) -> str | None:
    if _ENV_NAME.fullmatch(value):
        return None
    return (
        "must be a valid environment variable name "
        f"(regex used for validation is '{ENV_NAME_PATTERN}')"
    )


def _secret_key(value: str) -> str | None:
    if len(value) > 253:
        return metadata_rules.max_len_error(253)
    if not _SECRET_KEY.fullmatch(value) or value in (".", "..") or value.startswith(".."):
        return (
            "a valid Secret key must consist of alphanumeric characters, '-', '_' or '.' "
            f"(e.g. 'key.name', regex used for validation is '{SECRET_KEY_PATTERN}')"
        )
    return None


def _token(value: str) -> str | None:
    if _TOKEN.fullmatch(value):
        return None
    return (
        "must be at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with "
        "an alphanumeric character"
    )


def _dns_label(value: str) -> str | None:
    errors = metadata_rules.dns1123_label_errors(value)
    return "; ".join(errors) if errors else None


def _dns_subdomain(value: str) -> str | None:
    errors = metadata_rules.dns1123_subdomain_errors(value)
    return "; ".join(errors) if errors else None


def _qualified_name(value: str) -> str | None:
    errors = metadata_rules.qualified_name_errors(value)
    return "; ".join(errors) if errors else None


def _condition_reason(value: str) -> str | None:
    if _CONDITION_REASON.fullmatch(value):
        return None
    return (
        "a condition reason must start with alphabetic character, optionally followed by a "
        "string of alphanumeric characters or '_,:', and must end with an alphanumeric "
        "character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  "
        "or 'ReasonA:ReasonB', regex used for validation is "
        "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"
    )


def _date_time(value: str) -> str | None:
    hint = "must be an RFC 3339 date-time such as '2026-12-02T10:51:39Z'"
    if not _DATE_TIME.fullmatch(value):
        return hint
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return hint
    return None


def _quantity(value: str | int | float) -> str | None:
    try:
        amount = parse_quantity(value)
    except ValueError as error:
        return str(error)
    return None if amount > 0 else "must be greater than zero"


def _duration(value: str) -> str | None:
    try:
        seconds = parse_duration(value)
    except ValueError as error:
        return str(error)
    return None if seconds > 0 else "must be greater than zero"


_CHECKS: dict[str, Callable[..., str | None]] = {
    "image-ref": _image_ref,
    "digest": _digest,
    "hf-repo": _hf_repo,
    "absolute-path": _absolute_path,
    "env-name": _env_name,
    "secret-key": _secret_key,
    "token": _token,
    "dns-label": _dns_label,
    "dns-subdomain": _dns_subdomain,
    "qualified-name": _qualified_name,
    "condition-reason": _condition_reason,
    "date-time": _date_time,
    "quantity": _quantity,
    "duration": _duration,
}

FORMAT_PATTERNS: dict[str, str] = {
    "image-ref": IMAGE_REF_PATTERN,
    "digest": DIGEST_PATTERN,
    "hf-repo": HF_REPO_PATTERN,
    "env-name": ENV_NAME_PATTERN,
    "secret-key": SECRET_KEY_PATTERN,
    "token": TOKEN_PATTERN,
    "dns-label": "^" + metadata_rules.DNS1123_LABEL_FMT + "$",
    "dns-subdomain": "^" + metadata_rules.DNS1123_SUBDOMAIN_FMT + "$",
    "condition-reason": CONDITION_REASON_PATTERN,
    "quantity": QUANTITY_PATTERN,
    "duration": DURATION_PATTERN,
}

# Formats that OpenAPI 3.0 tooling (and CRD structural schemas) already know by name.
OPENAPI_FORMATS = {"date-time", "duration"}

HINTS = {"quantity": QUANTITY_HINT, "duration": DURATION_HINT}


def check_format(name: str, value: str | int | float) -> str | None:
    """Returns why `value` breaks format `name`, or None when it conforms."""
    check = _CHECKS.get(name)
    return check(value) if check else None


def known_formats() -> frozenset[str]:
    return frozenset(_CHECKS)
