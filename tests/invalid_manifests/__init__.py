"""The invalid-manifest corpus: a valid base runtime and merge patches that break it.

`cases()` yields each case ({name, rule, patch, expect: [{field, reason}]}); `manifest(case)`
applies its patch to `base()` (RFC 7386 JSON merge patch). The same corpus drives the unit tests
(through ``runtimes.registry.trainingruntime.validation``) and can drive the HTTP API tests (expect
a 422 whose causes are exactly ``expect``). `stub_catalog()` is the accelerator catalog reduced to
the names validation needs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

HERE = Path(__file__).parent


def base() -> dict[str, Any]:
    return yaml.safe_load((HERE / "base.yaml").read_text())


def cases() -> list[dict[str, Any]]:
    return yaml.safe_load((HERE / "cases.yaml").read_text())


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def manifest(case: dict[str, Any]) -> dict[str, Any]:
    return merge_patch(base(), case["patch"])


def stub_catalog() -> SimpleNamespace:
    names = yaml.safe_load((HERE / "catalog.yaml").read_text())
    return SimpleNamespace(
        ids=tuple(names["ids"]), families=tuple(names["families"]), classes=tuple(names["classes"])
    )
