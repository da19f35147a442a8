"""The error-reason registry and the one exception type every face raises.

Each Kubernetes ``StatusReason`` we answer with is registered once here: its HTTP code, what it
means, common causes and the default fix. The API renders an `ApiError` as a ``metav1.Status``
with our ``docs``, ``fix`` and ``requestId`` extensions; the console serves the docs pages from
the same registry, so a reason can never lack its page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtimes.apimachinery.fielderrors import FieldError, render_value


@dataclass(frozen=True)
class Reason:
    code: int
    title: str
    meaning: str
    causes: tuple[str, ...]
    fix: str


REASONS: dict[str, Reason] = {
    "BadRequest": Reason(
        400,
        "Bad request",
        "The request could not be understood: its body, query or selector is malformed.",
        (
            "The body is not valid JSON or YAML.",
            "apiVersion, kind or metadata.namespace in the body do not match the URL.",
            "A label or field selector does not parse, or names a field that cannot be selected.",
            "fieldValidation=Strict and the object carries fields the schema does not know.",
            "An update or patch sent to a collection, which names no object.",
        ),
        "Correct the part of the request the message names and send it again.",
    ),
    "Unauthorized": Reason(
        401,
        "Unauthorized",
        "The request carried no credentials, or credentials that are unknown or revoked.",
        (
            "No Authorization header or session.",
            "The token was revoked or mistyped.",
            "A watch or websocket whose token was revoked, or whose user was deactivated or "
            "signed out, while it was open: it ends with this Status (close code 4401).",
        ),
        "Send 'Authorization: Bearer <token>'; get a kubeconfig with a fresh token from the "
        "console's Tokens page or `python manage.py kubeconfig --user NAME`.",
    ),
    "Forbidden": Reason(
        403,
        "Forbidden",
        "You are known, but your role in this project does not allow this verb.",
        (
            "Viewers may get, list and watch; editors may also write; admins manage members.",
            "Only platform admins write in the managed project 'nodus'.",
            "Writing status (`trainingruntimes/status`) needs the status permission: only the "
            "controller's service account and platform admins hold it, project roles do not.",
            "A watch or websocket whose role binding was removed while it was open: it ends with "
            "this Status (close code 4403).",
        ),
        "Ask an admin of the project for the editor role, or work in a project of your own; "
        "status is the controller's to write.",
    ),
    "NotFound": Reason(
        404,
        "Not found",
        "The object, project or path does not exist.",
        (
            "A typo in the name or the project.",
            "The object was deleted.",
            "An unknown API path.",
            "A namespaced kind's path without a project, for anything but a list or watch.",
        ),
        "Check the name and project: `kubectl get tr -n PROJECT` lists what exists.",
    ),
    "AlreadyExists": Reason(
        409,
        "Already exists",
        "An object with this name already exists in the project.",
        ("A second create with the same name.", "generateName could not find a free name."),
        "Pick another name, or update the existing object (`kubectl apply` or `replace`).",
    ),
    "Conflict": Reason(
        409,
        "Conflict",
        "The object changed since you read it, or another field manager owns the fields you apply.",
        (
            "An update carried a stale metadata.resourceVersion.",
            "A delete precondition (uid or resourceVersion) did not match.",
            "Server-side apply touched fields another manager owns.",
        ),
        "Read the object again, re-apply your change on the latest version and retry; for "
        "server-side apply, take ownership with --force-conflicts if that is what you mean.",
    ),
    "Expired": Reason(
        410,
        "Expired",
        "The resourceVersion or continue token refers to history the server no longer keeps.",
        ("A watch resumed from a revision older than the event log window.",),
        "List again without resourceVersion (or continue) and watch from the list's version.",
    ),
    "Gone": Reason(
        410,
        "Gone",
        "The requested resource version is no longer available.",
        ("History was compacted.",),
        "List again and watch from the list's resourceVersion.",
    ),
    "Invalid": Reason(
        422,
        "Invalid",
        "The object breaks one or more rules of its kind; every problem is listed as a cause "
        "with its field path.",
        (
            "A required field is missing or a value is outside its allowed set.",
            "A quantity, duration or image reference does not parse.",
            "spec.parameters is not a valid JSON Schema, or defaults do not satisfy it.",
        ),
        "Fix each field named in details.causes; `kubectl explain tr.spec` describes them.",
    ),
    "MethodNotAllowed": Reason(
        405,
        "Method not allowed",
        "This path does not support the HTTP method used.",
        (
            "Writing a read-only kind (the accelerator catalog, namespaces, events).",
            "Creating or deleting a subresource such as `status`.",
        ),
        "Use the verbs the resource lists in discovery (`kubectl api-resources -o wide`).",
    ),
    "NotAcceptable": Reason(
        406,
        "Not acceptable",
        "The server cannot answer in any media type the Accept header allows.",
        ("Asking for protobuf or an unknown Table version.",),
        "Accept application/json (or a meta.k8s.io Table).",
    ),
    "RequestTimeout": Reason(
        408,
        "Request timeout",
        "The client did not send its request line and headers, or its body, within the time the "
        "server allows; the server answered this and closed the connection.",
        (
            "A client or proxy that stalls mid-request, or sends a byte at a time (slow-loris).",
            "A very slow link for a large body.",
        ),
        "Send the request again in one go; the message says which deadline passed.",
    ),
    "RequestURITooLong": Reason(
        414,
        "URI too long",
        "The request line (method, path and query string) is longer than the server reads; the "
        "server answered this and closed the connection.",
        ("A label or field selector with very many terms.",),
        "Shorten the query: select on one label the objects share instead of listing many values.",
    ),
    "RequestHeaderFieldsTooLarge": Reason(
        431,
        "Request header fields too large",
        "The request's headers are larger or more numerous than the server reads; the server "
        "answered this and closed the connection.",
        ("Oversized cookies or tokens.", "A client or proxy that repeats headers."),
        "Send fewer or smaller headers; clear this site's cookies if a browser sent them.",
    ),
    "RequestEntityTooLarge": Reason(
        413,
        "Request entity too large",
        "The request body is larger than the server accepts (3 MiB by default).",
        ("An oversized parameters schema or annotation.",),
        "Shrink the object: spec.parameters may be at most 64 KiB.",
    ),
    "UnsupportedMediaType": Reason(
        415,
        "Unsupported media type",
        "The body's Content-Type is not one this endpoint accepts.",
        ("A strategic merge patch (kubectl patch without --type) sent to a custom resource.",),
        "Use `kubectl patch --type merge` or `--type json`, or send application/json.",
    ),
    "TooManyRequests": Reason(
        429,
        "Too many requests",
        "The server is shedding load; the request was not processed.",
        (
            "Too many requests from one client in a short time.",
            "Too many failed bearer tokens from one address (20 within a minute by default).",
            "Too many failed sign-ins for one user from one address (the console's and the "
            "admin's sign-in lock out for 15 minutes).",
            "More lists, watches or other requests in flight from one client, or from all "
            "clients, than the server's seat pools hold (lists: 2 per client, 8 in all).",
            "The server is shutting down (a restart or a deploy); retry and another worker, or "
            "this one once back, answers.",
        ),
        "Wait for Retry-After seconds and retry; if your token is being refused, get a fresh one "
        "first.",
    ),
    "InternalError": Reason(
        500,
        "Internal error",
        "The server failed while handling the request. Nothing was changed.",
        ("A bug, or the database being unavailable.",),
        "Retry; if it persists, report the requestId to the platform team.",
    ),
    "ServiceUnavailable": Reason(
        503,
        "Service unavailable",
        "A dependency (database, channel layer) is not ready.",
        ("The server is starting or a dependency is down.",),
        "Retry in a few seconds.",
    ),
    "Timeout": Reason(
        504,
        "Timeout",
        "The server could not complete the request in time.",
        ("A resourceVersion ahead of the server's current revision.",),
        "Retry without resourceVersion, or later.",
    ),
}


@dataclass
class ApiError(Exception):
    """An error answered as a metav1.Status; `details` are its details (name, group, kind).

    As kube's `metav1.StatusDetails`, whose fields are all `omitempty`: an empty name, group or
    kind is left out, and `details` itself only when kube sets none (None here). kube's generic
    answers (`NewGenericServerResponse`: an unknown path, a method no route serves) carry an
    empty details object, `{}`.
    """

    reason: str
    message: str
    details: dict[str, Any] | None = None
    causes: list[FieldError] = field(default_factory=list)
    fix: str | None = None
    retry_after: int | None = None
    # Status.metadata (e.g. a fresh continue token on 410 Expired).
    list_meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"unregistered reason {self.reason}")
        super().__init__(self.message)

    @property
    def code(self) -> int:
        return REASONS[self.reason].code

    def status(self) -> dict[str, Any]:
        details = {k: v for k, v in (self.details or {}).items() if v not in ("", None)}
        if self.causes:
            details["causes"] = [c.as_cause() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details or self.details is not None:
            body["details"] = details
        body["fix"] = self.fix or REASONS[self.reason].fix
        return body


def gr(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


NO_SUCH_PATH = "the server could not find the requested resource"
NOT_SERVED = "the server does not allow this method on the requested resource"


def path_not_found() -> ApiError:
    """A path that names no resource (kube: `NewGenericServerResponse(404)`, empty details)."""
    return ApiError("NotFound", NO_SUCH_PATH, {})


def method_not_served() -> ApiError:
    """A method no route of the path serves (kube: `NewGenericServerResponse(405)`)."""
    return ApiError("MethodNotAllowed", NOT_SERVED, {})


def internal_error(what: str) -> ApiError:
    """kube's NewInternalError: the error in the message and again as the one cause."""
    return ApiError(
        "InternalError", f"Internal error occurred: {what}", {"causes": [{"message": what}]}
    )


def method_not_supported(resource: str, group: str, verb: str, **more: Any) -> ApiError:
    """A verb the resource's handler does not serve (kube: `NewMethodNotSupported`): details
    name the resource (the plural, never a subresource) and its group."""
    return ApiError(
        "MethodNotAllowed",
        f'{verb} is not supported on resources of kind "{gr(resource, group)}"',
        {"group": group, "kind": resource},
        **more,
    )


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        "NotFound",
        f'{gr(resource, group)} "{name}" not found',
        {"name": name, "group": group, "kind": resource},
    )


def namespace_not_found(name: str) -> ApiError:
    return ApiError(
        "NotFound",
        f'namespaces "{name}" not found',
        {"name": name, "kind": "namespaces"},
        fix="Projects are namespaces: `kubectl get tr -n nodus` lists the managed catalog; a "
        "platform admin creates projects with `python manage.py createproject NAME`.",
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        "AlreadyExists",
        f'{gr(resource, group)} "{name}" already exists',
        {"name": name, "group": group, "kind": resource},
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        "Conflict",
        f'Operation cannot be fulfilled on {gr(resource, group)} "{name}": {why}',
        {"name": name, "group": group, "kind": resource},
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: list[FieldError]) -> ApiError:
    summary = ", ".join(str(c) for c in causes)
    if len(causes) > 1:
        summary = "[" + summary + "]"
    return ApiError(
        "Invalid",
        f'{kind}.{group} "{name}" is invalid: {summary}'
        if group
        else f'{kind} "{name}" is invalid: {summary}',
        {"name": name, "group": group, "kind": kind},
        causes=list(causes),
        fix=" ".join(
            [
                "Change "
                + ", ".join(dict.fromkeys(c.field for c in causes))
                + " as each cause says.",
                *dict.fromkeys(c.fix for c in causes if c.fix),
            ]
        ),
    )


def bad_request(message: str, fix: str | None = None) -> ApiError:
    return ApiError("BadRequest", message, fix=fix)


def cannot_be_handled(kind: str, version: str, into: str, problem: str) -> str:
    """kube's message for a body that names a kind but does not decode into it (the handlers'
    transformDecodeError): a strict decoding error, or metadata of the wrong JSON type."""
    return f'{kind} in version "{version}" cannot be handled as a {into}: {problem}'


def patch_invalid(patched: str, problem: str, fix: str | None = None) -> ApiError:
    """kube's answer when a patched object does not decode (patch.go applyPatchToCurrentObject):
    a 422 with no kind or name and one cause at ``patch`` whose value is the patched object's
    JSON (``patched``)."""
    cause = FieldError(
        "patch", "FieldValueInvalid", f"Invalid value: {render_value(patched)}: {problem}"
    )
    return ApiError("Invalid", f' "" is invalid: {cause}', causes=[cause], fix=fix)


def forbidden(
    user: str,
    verb: str,
    resource: str,
    group: str,
    namespace: str,
    name: str = "",
    subresource: str = "",
) -> ApiError:
    what = f'{gr(resource, group)} "{name}"' if name else gr(resource, group)
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    # RBAC names a subresource as resource/subresource (`trainingruntimes/status`).
    named = f"{resource}/{subresource}" if subresource else resource
    return ApiError(
        "Forbidden",
        f'{what} is forbidden: User "{user}" cannot {verb} resource "{named}" in API group '
        f'"{group}"{where}',
        {"name": name, "group": group, "kind": resource},
    )


def expired(message: str, **list_meta: Any) -> ApiError:
    return ApiError("Expired", message, list_meta=list_meta)
