"""SelfSubjectAccessReview and SelfSubjectRulesReview: `kubectl auth can-i` (and `--list`)
asks, the endpoint declarations answer.

`POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` is answered from the same
declarations and the same `check` as the requests it asks about: the verb names the endpoint
(`list`, `watch`, `create`, `deletecollection` the collection; `get`, `update`, `patch`,
`delete` the item; `status` and `compile` their subresources) and the request method that
verb is sent as; the endpoint's `Access` says what that method needs of the caller. So "can I
patch trainingruntimes/status in demo" is exactly whether `PATCH .../status` would be refused.
A `nonResourceAttributes` question resolves the path to its view and asks its declaration.
"""

from __future__ import annotations

from typing import Any

from django.urls import Resolver404, resolve
from rest_framework import exceptions, parsers
from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.api import media
from runtimes.api.base import KubeView, respond
from runtimes.api.compile_view import CompileView
from runtimes.api.groups import api_group_document
from runtimes.api.objects import CollectionView, ItemView, StatusView
from runtimes.api.requestinfo import kind_for
from runtimes.apimachinery import errors, protowire
from runtimes.registry import authorization
from runtimes.registry.authorization import WATCH, Access, declared
from runtimes.registry.kinds import all_kinds, lookup

# kubectl reads `auth can-i patch trainingruntimes/status` as the runtime *named* `status`; the
# subresource is asked with `--subresource=status`. kubectl sends the review as Kubernetes protobuf
# (a built-in kind); JSON and YAML are accepted too, and the answer is JSON, which client-go reads.

GROUP = "authorization.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "SelfSubjectAccessReview"
PLURAL = "selfsubjectaccessreviews"
RULES_KIND = "SelfSubjectRulesReview"
RULES_PLURAL = "selfsubjectrulesreviews"
# What every signed-in caller may do besides the kinds' rules (kube's defaults for the same).
SELF_REVIEWS = [
    {"verbs": ["create"], "apiGroups": [GROUP], "resources": [PLURAL, RULES_PLURAL]},
    {
        "verbs": ["create"],
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["selfsubjectreviews"],
    },
]
# kube's system:discovery ClusterRole, bound to every signed-in user (health answers anyone).
DISCOVERY_URLS = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
]

# (subresource, verb) -> the endpoint's declaration and the method the verb is sent as.
ENDPOINTS: dict[tuple[str, str], tuple[Access, str]] = {
    ("", "list"): (CollectionView.access, "GET"),
    ("", "watch"): (CollectionView.access, WATCH),
    ("", "create"): (CollectionView.access, "POST"),
    ("", "deletecollection"): (CollectionView.access, "DELETE"),
    ("", "get"): (ItemView.access, "GET"),
    ("", "update"): (ItemView.access, "PUT"),
    ("", "patch"): (ItemView.access, "PATCH"),
    ("", "delete"): (ItemView.access, "DELETE"),
    ("status", "get"): (StatusView.access, "GET"),
    ("status", "update"): (StatusView.access, "PUT"),
    ("status", "patch"): (StatusView.access, "PATCH"),
    ("compile", "create"): (CompileView.access, "POST"),
}


# k8s.io/api/authorization/v1/generated.proto: the fields a review is decided on.
RESOURCE_ATTRIBUTES: protowire.Schema = {
    1: ("namespace", "string"),
    2: ("verb", "string"),
    3: ("group", "string"),
    4: ("version", "string"),
    5: ("resource", "string"),
    6: ("subresource", "string"),
    7: ("name", "string"),
}
NON_RESOURCE_ATTRIBUTES: protowire.Schema = {1: ("path", "string"), 2: ("verb", "string")}
RULES_REVIEW: protowire.Schema = {2: ("spec", {1: ("namespace", "string")})}
REVIEW: protowire.Schema = {
    2: (
        "spec",
        {
            1: ("resourceAttributes", RESOURCE_ATTRIBUTES),
            2: ("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
        },
    ),
}


class ProtobufReviewParser(parsers.BaseParser):
    """A SelfSubjectAccessReview as client-go sends it: Kubernetes protobuf."""

    media_type = protowire.MEDIA_TYPE
    schema: protowire.Schema = REVIEW

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            return protowire.decode(stream.read(), self.schema)
        except protowire.ProtobufError as exc:
            raise exceptions.ParseError(f"invalid protobuf: {exc}") from exc


class ProtobufRulesReviewParser(ProtobufReviewParser):
    """A SelfSubjectRulesReview as client-go sends it."""

    schema = RULES_REVIEW


def api_group() -> dict[str, Any]:
    return api_group_document(GROUP, VERSION)


def api_resource_list() -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": API_VERSION,
        "resources": [
            {
                "name": plural,
                "singularName": kind.lower(),
                "namespaced": False,
                "kind": kind,
                "verbs": ["create"],
            }
            for plural, kind in ((PLURAL, KIND), (RULES_PLURAL, RULES_KIND))
        ],
    }


def aggregated_group() -> dict[str, Any]:
    """The group's entry in aggregated discovery (apidiscovery.k8s.io/v2)."""
    resources = [
        {
            "resource": plural,
            "singularResource": kind.lower(),
            "scope": "Cluster",
            "responseKind": {"group": GROUP, "version": VERSION, "kind": kind},
            "verbs": ["create"],
        }
        for plural, kind in ((PLURAL, KIND), (RULES_PLURAL, RULES_KIND))
    ]
    return {
        "metadata": {"name": GROUP},
        "versions": [{"version": VERSION, "freshness": "Current", "resources": resources}],
    }


def _text(attributes: dict[str, Any], key: str) -> str:
    value = attributes.get(key) or ""
    if not isinstance(value, str):
        raise errors.bad_request(f"spec.resourceAttributes.{key} must be a string")
    return value


def _allowed(user: Any, access: Access, method: str, *args: Any, **kwargs: Any) -> bool:
    if access.level == "role" and access.verb(method) is None:
        return False  # `check` lets an unmapped method through: the view answers it 405
    try:
        authorization.check(user, access, method, *args, **kwargs)
    except errors.ApiError:
        return False
    return True


def review_resource(user: Any, attributes: dict[str, Any]) -> bool:
    verb = _text(attributes, "verb")
    rt = lookup(_text(attributes, "resource"), _text(attributes, "group"))
    subresource = _text(attributes, "subresource")
    if rt is None:
        return False
    if subresource and subresource not in rt.subresources:
        return False
    endpoint = ENDPOINTS.get((subresource, verb))
    if endpoint is None:
        return False
    access, method = endpoint
    namespace = _text(attributes, "namespace") if rt.namespaced else ""
    return _allowed(user, access, method, namespace, _text(attributes, "name"), rt)


def review_path(user: Any, attributes: dict[str, Any]) -> bool:
    path = attributes.get("path") or ""
    verb = attributes.get("verb") or ""
    if not isinstance(path, str) or not isinstance(verb, str):
        raise errors.bad_request("spec.nonResourceAttributes.path and verb must be strings")
    try:
        match = resolve(path)
    except Resolver404:
        return False
    access = declared(match.func)
    if access is None:
        return False
    kwargs = match.kwargs
    kind = kind_for(path, kwargs["plural"]) if "plural" in kwargs else None
    method = WATCH if verb == "watch" else verb.upper()
    namespace, name = kwargs.get("namespace") or "", kwargs.get("name", "")
    return _allowed(user, access, method, namespace, name, kind)


class SelfSubjectAccessReviewView(KubeView):
    access = authorization.signed_in("callers ask what they themselves may do")
    parser_classes = [media.KubeJSONParser, media.YAMLParser, ProtobufReviewParser]
    accepted_media_types = [media.JSON, media.YAML, protowire.MEDIA_TYPE]

    def post(self, request: Request) -> Response:
        body = self.body_object(request)
        if body.get("apiVersion") not in (None, "", API_VERSION) or body.get("kind") not in (
            None,
            "",
            KIND,
        ):
            raise errors.bad_request(
                f"the body must be a {KIND} of {API_VERSION}, got {body.get('kind')} of "
                f"{body.get('apiVersion')}"
            )
        spec = body.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        resource, path = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if isinstance(resource, dict):
            allowed = review_resource(request.user, resource)
        elif isinstance(path, dict):
            allowed = review_path(request.user, path)
        else:
            raise errors.bad_request(
                "exactly one of spec.resourceAttributes or spec.nonResourceAttributes is required"
            )
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        answer = {
            "kind": KIND,
            "apiVersion": API_VERSION,
            "metadata": {**(metadata or {}), "creationTimestamp": None},
            "spec": spec,
            "status": {"allowed": allowed},
        }
        return respond(answer, 201)


def rules(user: Any, namespace: str) -> list[dict[str, Any]]:
    """The caller's resource rules in `namespace`: for every kind and every verb an endpoint
    serves, whether `review_resource` would allow it there (one rule per resource)."""
    found: list[dict[str, Any]] = []
    for rt in all_kinds():
        by_resource: dict[str, list[str]] = {}
        for (subresource, verb), (access, method) in ENDPOINTS.items():
            if subresource and subresource not in rt.subresources:
                continue
            if not subresource and verb not in rt.verbs:
                continue  # a verb the kind does not serve (watching namespaces, say)
            where = namespace if rt.namespaced else ""
            if _allowed(user, access, method, where, "", rt):
                resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
                by_resource.setdefault(resource, []).append(verb)
        found += [
            {"verbs": verbs, "apiGroups": [rt.group], "resources": [resource]}
            for resource, verbs in by_resource.items()
        ]
    return found + SELF_REVIEWS


class SelfSubjectRulesReviewView(KubeView):
    """`kubectl auth can-i --list`: everything the caller may do in a namespace, from the same
    declarations `SelfSubjectAccessReviewView` asks one at a time."""

    access = authorization.signed_in("callers ask what they themselves may do")
    parser_classes = [media.KubeJSONParser, media.YAMLParser, ProtobufRulesReviewParser]
    accepted_media_types = [media.JSON, media.YAML, protowire.MEDIA_TYPE]

    def post(self, request: Request) -> Response:
        body = self.body_object(request)
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        namespace = (spec or {}).get("namespace") or ""
        if not isinstance(namespace, str):
            raise errors.bad_request("spec.namespace must be a string")
        answer = {
            "kind": RULES_KIND,
            "apiVersion": API_VERSION,
            "metadata": {"creationTimestamp": None},
            "spec": {"namespace": namespace} if namespace else {},
            "status": {
                "resourceRules": rules(request.user, namespace),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": DISCOVERY_URLS}],
                "incomplete": False,
            },
        }
        return respond(answer, 201)


class GroupView(KubeView):
    access = authorization.signed_in("names kinds and verbs, never an object")

    def get(self, request: Request) -> Response:
        return respond(api_group())


class GroupVersionView(KubeView):
    access = authorization.signed_in("names kinds and verbs, never an object")

    def get(self, request: Request) -> Response:
        return respond(api_resource_list())
