"""The `APIGroup` discovery document, one shape for every group this server answers."""

from __future__ import annotations

from typing import Any


def api_group_document(group: str, version: str) -> dict[str, Any]:
    """`/apis/GROUP`: the group's one served version, also its preferred one."""
    group_version = {"groupVersion": f"{group}/{version}", "version": version}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [group_version],
        "preferredVersion": dict(group_version),
    }
