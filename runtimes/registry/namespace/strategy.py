"""core/v1 Namespaces' strategy and printer columns: read-only, as `kubectl get ns` prints them."""

from __future__ import annotations

from runtimes.registry.strategy import Strategy

STRATEGY = Strategy()

COLUMNS = (
    (
        "Status",
        "string",
        "The status of the namespace",
        0,
        lambda obj: (obj.get("status") or {}).get("phase", ""),
    ),
)
