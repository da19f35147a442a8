"""The base of every API view: negotiation, authentication, the kind from the URL, responses."""

from __future__ import annotations

import unicodedata
from typing import Any

import orjson
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes.api import media
from runtimes.api.options import WriteOptions, write_options
from runtimes.api.patching import manager_name
from runtimes.api.requestinfo import kind_for
from runtimes.apimachinery import errors, fielderrors, metadecode
from runtimes.registry import authorization
from runtimes.registry.resources import ResourceType
from runtimes.storage import actor, store


def warning_header(warnings: list[str]) -> str:
    """RFC 7234 warn-codes as kube-apiserver writes them; client-go splits on commas."""
    seen = list(dict.fromkeys(warnings))
    quoted = []
    for text in seen:
        if any(unicodedata.category(c) == "Cc" for c in text):
            continue  # kube's NewWarningHeader refuses control characters (go-yaml's newlines)
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        quoted.append(f'299 - "{escaped}"')
    return ", ".join(quoted)[:4096]


def respond(data: Any, status: int = 200, warnings: list[str] | None = None) -> Response:
    response = Response(data, status=status)
    if warnings:
        response["Warning"] = warning_header(warnings)
    return response


class DeclaredAccess(BasePermission):
    """DRF's permission step checks the view's declaration before the view resolves its URL's
    kind, so only the caller: an anonymous request gets 401 before any 404. `KubeView.initial`
    checks the role once the kind is known."""

    def has_permission(self, request: Request, view: Any) -> bool:
        authorization.check(request.user, view.access, request.method or "GET")
        return True


class KubeView(APIView):
    # What the endpoint asks of its caller (runtimes.registry.authorization); every concrete
    # view declares its own.
    access: authorization.Access
    # No OPTIONS: kube-apiserver answers it 405 MethodNotAllowed, not with DRF's metadata.
    http_method_names = ["get", "post", "put", "patch", "delete", "head"]
    permission_classes = [DeclaredAccess]
    content_negotiation_class = media.KubeNegotiation
    renderer_classes = [media.KubeJSONRenderer]
    parser_classes = [media.KubeJSONParser, media.YAMLParser]
    accepted_media_types = [media.JSON, media.YAML]
    # Which `as=` renderings this view can answer besides plain JSON.
    renderings: tuple[str, ...] = ()
    # What the body's decoding found that strict decoding refuses: repeated keys, in kube's
    # words (set by the parser); fieldValidation decides what they mean.
    repeated: list[str] = []
    rt: ResourceType

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        meta = request._request.META
        if request.method in {"POST", "PUT"} and not meta.get("CONTENT_TYPE"):
            # kube-apiserver reads a body without Content-Type as JSON (the official Python
            # client's create sends none); patches must say which kind they are.
            meta["CONTENT_TYPE"] = media.JSON
        # Views run on long-lived pooled threads: the caller is set for every request, so a
        # write is never recorded as the thread's previous caller's.
        actor.set_for_thread(actor.NOBODY)
        super().initial(request, *args, **kwargs)
        if request.user.is_authenticated:
            actor.set_for_thread(actor.Actor(request.user.get_username()))
        plural = kwargs.get("plural")
        if plural is not None:
            rt = kind_for(request._request.path, plural)
            if rt is None:
                raise errors.path_not_found()
            namespaced_path = "namespace" in kwargs
            if namespaced_path and not rt.namespaced:
                raise errors.path_not_found()
            self.rt = rt
            if namespaced_path and request.user.is_authenticated and self.needs_namespace(request):
                # Projects are namespaces and their names are no secret to signed-in users: an
                # unknown one answers `namespaces "x" not found` (what kubectl prints for
                # `get tr x -n nope`) before the role check could answer 403.
                store.ensure_namespace(rt, kwargs["namespace"])
        self.refuse_unservable(request)
        authorization.check(
            request.user,
            self.access,
            request.method or "GET",
            kwargs.get("namespace") or "",
            kwargs.get("name", ""),
            getattr(self, "rt", None),
        )
        if plural is not None and self.rt.namespaced and "namespace" not in kwargs:
            self.check_cluster_scope(request)
        # Like the body's media type, what the answer may be is the handler's to judge, after
        # the role check: a caller who may not read gets 403 whatever they accept.
        self.check_media_type(request)
        self.rendering = media.accepted_as(request, self.renderings)
        if self.rendering is None:
            raise media.not_acceptable()

    def across_namespaces(self, request: Request) -> bool:
        """Whether this request is served at the cluster scope of a namespaced kind."""
        return False

    def check_cluster_scope(self, request: Request) -> None:
        """Past the role check, as kube's custom resource handler passes a namespaced kind's
        cluster-scoped path on (to a 404) for every verb but list and watch: a create, an
        object's read or write, a deletecollection all need the project in the path."""
        if self.across_namespaces(request):
            return
        rt = self.rt
        base = f"/apis/{rt.api_version}" if rt.group else f"/api/{rt.version}"
        raise errors.ApiError(
            "NotFound",
            "the server could not find the requested resource",
            fix=f"{rt.kind} objects live in projects: send this to {base}/namespaces/PROJECT/"
            f"{rt.plural}/... (`kubectl -n PROJECT`).",
        )

    def needs_namespace(self, request: Request) -> bool:
        """Whether this request is refused in a namespace that doesn't exist."""
        return True

    def refuse_unservable(self, request: Request) -> None:
        """Raises for a request this view cannot serve whoever sends it (a method or a
        subresource the kind lacks): answered before the role check, as always."""

    def check_media_type(self, request: Request) -> None:
        """Raises 415 for a body this write cannot take, once the caller may make it: kube
        authorizes in a filter before any handler, and the handler reads the media type."""

    def write_context(
        self, request: Request, kind: str, apply: bool = False
    ) -> tuple[WriteOptions, str]:
        """A write's options and its field manager."""
        options = write_options(request.query_params, kind, apply=apply)
        manager = manager_name(options.field_manager, request.META.get("HTTP_USER_AGENT", ""))
        return options, manager

    def body_object(self, request: Request) -> dict[str, Any]:
        body = request.data
        if not isinstance(body, dict):
            raise errors.bad_request(
                "the body of the request must be a JSON object",
                fix="Send one object as JSON (or YAML), e.g. the output of "
                "`kubectl get tr X -o json`.",
            )
        return body

    def require_type_meta(self, body: dict[str, Any]) -> None:
        """A body sent whole (create, update, apply) names its kind and apiVersion, as kube's
        decoder requires."""
        for key, label in (("kind", "Kind"), ("apiVersion", "apiVersion")):
            if not body.get(key):
                shown = orjson.dumps(body).decode(errors="replace")
                shown = shown if len(shown) <= 1024 else shown[:1024] + "..."
                raise errors.bad_request(
                    f"Object '{label}' is missing in '{shown}'",
                    fix=f"Start the manifest with `apiVersion: {self.rt.api_version}` and "
                    f"`kind: {self.rt.kind}`.",
                )

    def refuse_repeated(self, body: dict[str, Any], field_validation: str) -> None:
        """Under Strict, keys the body repeats are refused at once (400), as kube's decoder
        refuses them, naming the unknown fields beside them; the store judges unknown fields
        alone, and warns of both under Warn."""
        if self.repeated and field_validation == "Strict":
            unknown = self.rt.strategy.unknown_fields(body)
            raise store.StrictDecodingError.of(
                self.rt, [*self.repeated, *(f'unknown field "{path}"' for path in unknown)]
            )

    def decode_metadata(self, body: dict[str, Any]) -> None:
        """Metadata that does not decode into ObjectMeta (a label that is a number, labels as a
        list): kube's decoder refuses the body, 400 (`metadecode`)."""
        problem = metadecode.type_error(body.get("metadata"))
        if problem:
            version = str(body.get("apiVersion") or "").rpartition("/")[2]
            raise errors.bad_request(
                errors.cannot_be_handled(str(body.get("kind")), version, self.rt.kind, problem),
                fix="Give each metadata field its type: labels and annotations map strings to "
                "strings (quote numbers and booleans), finalizers are a list of strings "
                f"(`kubectl explain {self.rt.plural}.metadata`).",
            )

    def check_identity(
        self,
        body: dict[str, Any],
        namespace: str | None,
        name: str | None = None,
        whole: bool = False,
    ) -> None:
        """The body's kind, namespace and name agree with the URL; `whole` (a PUT) must name
        the object itself."""
        rt = self.rt
        api_version = body.get("apiVersion")
        if api_version not in (None, "", rt.api_version):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.api_version})"
            )
        kind = body.get("kind")
        meta = body.get("metadata")
        if kind not in (None, "", rt.kind):
            # kube decodes the body, then its validator refuses the kind (ValidateTypeMeta):
            # a 422 naming the object by the kind it claims.
            name_in_body = meta.get("name", "") if isinstance(meta, dict) else ""
            raise errors.invalid(
                str(kind),
                str(api_version or rt.api_version).rpartition("/")[0],
                str(name_in_body or name or ""),
                [
                    fielderrors.invalid(
                        "kind",
                        kind,
                        f"must be {rt.kind}",
                        fix=f"Send it to the {kind} endpoint, or make it a {rt.kind} "
                        f"(`kind: {rt.kind}`).",
                    )
                ],
            )
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        body_ns = meta.get("namespace")
        if rt.namespaced and body_ns and namespace and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request",
                fix=f"Drop metadata.namespace from the body or send it to project {body_ns!r} "
                f"(`kubectl -n {body_ns}`).",
            )
        body_name = meta.get("name")
        if name is not None and (body_name or whole) and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name or ''}) does not match the name on the URL "
                f"({name})"
            )
