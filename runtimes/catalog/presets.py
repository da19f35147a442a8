"""Presets: the resources a job asks for once its preset is chosen.

A preset's ``resources`` fields replace the defaults' whole: its GPU request was measured as one
piece, so a default ``minMemory`` or ``interconnect`` must not leak into it. Compiling a job and
the console's Presets and Estimates tabs all take a preset's resources from here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def preset_resources(spec: Mapping[str, Any], preset: Mapping[str, Any] | None) -> dict[str, Any]:
    """The floors a job on ``preset`` (None: on none) asks for, as a copy the caller may change.

    Each field of the preset's ``resources`` replaces the same field of ``defaults.resources``.
    """
    defaults: Mapping[str, Any] = spec.get("defaults") or {}
    return copy.deepcopy(
        {**(defaults.get("resources") or {}), **((preset or {}).get("resources") or {})}
    )
