"""core/v1 Events as events.k8s.io/v1 shows them (kube serves both from one storage)."""

from __future__ import annotations

from runtimes.apimachinery.meta import Obj
from runtimes.registry.event.schema import EVENTS_GROUP, KIND, V1_FIELDS


def to_v1(core: Obj) -> Obj:
    """A core/v1 Event as events.k8s.io/v1 shows it (`eventTime`, which that version requires,
    is null for a core Event written without one)."""
    converted: Obj = {
        "kind": KIND,
        "apiVersion": f"{EVENTS_GROUP}/v1",
        "metadata": core.get("metadata", {}),
    }
    for old, new in V1_FIELDS.items():
        if core.get(old) not in (None, "", {}):
            converted[new] = core[old]
    if "eventTime" not in converted:
        converted["eventTime"] = None
    return converted
