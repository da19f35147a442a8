"""core/v1 Namespaces: the kind's names and the object each project is shown as.

Projects live in the accounts' tables, not the store, so a Namespace is made from a project
row when it is read; the API serves them read-only (`runtimes.api.namespaces`).
"""

from __future__ import annotations

import uuid

from runtimes.apimachinery.meta import Obj
from runtimes.storage.models import Project

KIND = "Namespace"
PLURAL = "namespaces"


def namespace_object(project: Project) -> Obj:
    return {
        "kind": KIND,
        "apiVersion": "v1",
        "metadata": {
            "name": project.name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"nodus:project:{project.name}")),
            "creationTimestamp": project.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "labels": {"kubernetes.io/metadata.name": project.name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
