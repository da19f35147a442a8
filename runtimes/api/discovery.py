"""Discovery: /version, /api, /apis and the group-version documents kubectl reads first.

Both the aggregated (apidiscovery.k8s.io/v2) and the legacy shapes are generated from the
kind registry; kubectl picks one by the response Content-Type. Beside our
group, /apis lists authorization.k8s.io/v1 for the SelfSubjectAccessReviews that `kubectl auth
can-i` sends (`runtimes.api.access_review`).
"""

from __future__ import annotations

import base64
import hashlib
import platform
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.api import access_review, media
from runtimes.api.base import KubeView, respond
from runtimes.api.groups import api_group_document
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import GROUP, VERSION
from runtimes.registry import authorization
from runtimes.registry.kinds import all_kinds
from runtimes.registry.resources import ResourceType

# The kube-apiserver release whose API this server speaks. As kube's version.Info since 1.33:
# the binary's version, then the version it emulates (its own, by default) and the oldest it
# stays compatible with (one minor before the emulated one).
MAJOR, MINOR = 1, 35
SERVER_VERSION = {
    "major": str(MAJOR),
    "minor": str(MINOR),
    "emulationMajor": str(MAJOR),
    "emulationMinor": str(MINOR),
    "minCompatibilityMajor": str(MAJOR),
    "minCompatibilityMinor": str(MINOR - 1),
    "gitVersion": f"v{MAJOR}.{MINOR}.0-nodus",
}


def storage_version_hash(rt: ResourceType) -> str:
    digest = hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _subresource_verbs(name: str) -> list[str]:
    return ["create"] if name == "compile" else ["get", "patch", "update"]


def served_kinds(group: str, version: str) -> list[ResourceType]:
    return [rt for rt in all_kinds() if rt.group == group and rt.version == version]


def api_resource_list(group: str = GROUP, version: str = VERSION) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rt in served_kinds(group, version):
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs,
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entry["storageVersionHash"] = storage_version_hash(rt)
        resources.append(entry)
        for sub in rt.subresources:
            resources.append(
                {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": rt.kind if sub == "status" else "CompileResult",
                    "verbs": _subresource_verbs(sub),
                }
            )
    if not group:  # kube writes the core list without an apiVersion
        return {"kind": "APIResourceList", "groupVersion": version, "resources": resources}
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}",
        "resources": resources,
    }


def api_group() -> dict[str, Any]:
    return api_group_document(GROUP, VERSION)


def kube_groups() -> list[tuple[str, str]]:
    """The built-in groups (beside core, ours and authorization) whose kinds the registry
    holds, each with its one version: events.k8s.io/v1."""
    found = {(rt.group, rt.version) for rt in all_kinds() if rt.group not in ("", GROUP)}
    return sorted(found)


def _aggregated_resources(group: str, version: str) -> list[dict[str, Any]]:
    resources = []
    for rt in served_kinds(group, version):
        # kube's built-in groups leave the response kind's group and version empty (the
        # group-version's own); a custom resource's name them.
        kind = (
            {"group": rt.group, "version": rt.version, "kind": rt.kind}
            if rt.group
            else {"group": "", "version": "", "kind": rt.kind}
        )
        entry: dict[str, Any] = {
            "resource": rt.plural,
            "singularResource": rt.singular,
            "scope": "Namespaced" if rt.namespaced else "Cluster",
            "responseKind": kind,
            "verbs": rt.verbs,
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        if rt.subresources:
            entry["subresources"] = [
                {
                    "subresource": sub,
                    "responseKind": kind
                    if sub == "status"
                    else {"group": rt.group, "version": rt.version, "kind": "CompileResult"},
                    "verbs": _subresource_verbs(sub),
                }
                for sub in rt.subresources
            ]
        resources.append(entry)
    return resources


def aggregated(core: bool) -> dict[str, Any]:
    """/api's document (the core group alone) or /apis' (every other group)."""
    items: list[dict[str, Any]] = []
    if core:
        items.append(
            {
                "metadata": {"creationTimestamp": None},
                "versions": [
                    {
                        "version": "v1",
                        "resources": _aggregated_resources("", "v1"),
                        "freshness": "Current",
                    }
                ],
            }
        )
    else:
        items.append(
            {
                "metadata": {"name": GROUP},
                "versions": [
                    {
                        "version": VERSION,
                        "freshness": "Current",
                        "resources": _aggregated_resources(GROUP, VERSION),
                    }
                ],
            }
        )
        items.append(access_review.aggregated_group())
        items += [
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": version,
                        "resources": _aggregated_resources(group, version),
                        "freshness": "Current",
                    }
                ],
            }
            for group, version in kube_groups()
        ]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


DISCOVERY = authorization.signed_in("names kinds and verbs, never an object")


class VersionView(KubeView):
    access = authorization.public("the server's version, as kube-apiserver's /version")

    def get(self, request: Request) -> Response:
        return respond(
            {
                **SERVER_VERSION,
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean",
                "buildDate": "2026-12-01T00:00:00Z",
                "goVersion": f"python{platform.python_version()}",
                "compiler": "cpython",
                "platform": f"{platform.system().lower()}/{platform.machine()}",
            }
        )


class _DiscoveryView(KubeView):
    access = DISCOVERY
    renderings = ("APIGroupDiscoveryList",)
    core = False

    def legacy(self) -> dict[str, Any]:
        raise NotImplementedError

    def get(self, request: Request) -> Response:
        if self.rendering and self.rendering[0] == "APIGroupDiscoveryList":
            response = respond(aggregated(self.core))
            response.content_type = media.AGGREGATED_DISCOVERY
            return response
        return respond(self.legacy())


class CoreDiscoveryView(_DiscoveryView):
    core = True

    def legacy(self) -> dict[str, Any]:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": self.request.get_host()}
            ],
        }


class CoreVersionView(KubeView):
    """/api/v1: the core kinds served here (Events, and Namespaces for the projects)."""

    access = DISCOVERY

    def get(self, request: Request) -> Response:
        return respond(api_resource_list("", "v1"))


class GroupsDiscoveryView(_DiscoveryView):
    def legacy(self) -> dict[str, Any]:
        groups = [api_group(), access_review.api_group()]
        groups += [api_group_document(group, version) for group, version in kube_groups()]
        for group in groups:
            group.pop("kind")
            group.pop("apiVersion")
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


class GroupView(KubeView):
    access = DISCOVERY
    group = GROUP
    version = VERSION

    def get(self, request: Request) -> Response:
        return respond(api_group_document(self.group, self.version))


class GroupVersionView(KubeView):
    access = DISCOVERY
    group = GROUP
    version = VERSION

    def get(self, request: Request) -> Response:
        return respond(api_resource_list(self.group, self.version))


@authorization.declare(authorization.public("answers 404 to everyone: it names nothing"))
def unknown_path(request: Any) -> Any:
    from runtimes.api.status import status_response

    return status_response(request, errors.path_not_found())
