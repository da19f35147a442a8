"""What every object of ours shares: its JSON type, and the API group and version we serve."""

from __future__ import annotations

from typing import Any

# An object as the API carries it: decoded JSON, keyed by field name.
Obj = dict[str, Any]

GROUP = "nodus.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
