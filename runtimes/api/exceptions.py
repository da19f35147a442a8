"""DRF's exception handler: every error leaves the API as one metav1.Status."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse
from rest_framework import exceptions

from runtimes.api.requestid import too_large
from runtimes.api.status import status_response
from runtimes.apimachinery import errors
from runtimes.apimachinery.errors import ApiError


def as_api_error(exc: Exception, context: dict[str, Any]) -> ApiError | None:
    if isinstance(exc, ApiError):
        return exc
    view = context.get("view")
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return ApiError("Unauthorized", "Unauthorized")
    if isinstance(exc, exceptions.PermissionDenied):
        return ApiError("Forbidden", str(exc.detail))
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return unsupported_media_type(exc.detail, view)
    if isinstance(exc, exceptions.ParseError):
        request = context.get("request")
        content_type = getattr(request, "content_type", "") or ""
        if getattr(request, "method", "") == "PATCH" and content_type.startswith(
            ("application/merge-patch+json", "application/json-patch+json")
        ):
            # kube's patch handler words a patch that does not decode this way (applyJSPatch).
            return ApiError("BadRequest", f"error decoding patch: {exc.detail}")
        return ApiError("BadRequest", f"the body of the request could not be decoded: {exc.detail}")
    if isinstance(exc, exceptions.MethodNotAllowed):
        return method_not_allowed(context)
    if isinstance(exc, exceptions.NotAcceptable):
        return ApiError("NotAcceptable", str(exc.detail))
    if isinstance(exc, exceptions.Throttled):
        wait = int(exc.wait or 1)
        return ApiError(
            "TooManyRequests", "Too many requests, please try again later.", retry_after=wait
        )
    if isinstance(exc, RequestDataTooBig):
        return too_large()
    if isinstance(exc, Http404):
        return errors.path_not_found()
    return None


def unsupported_media_type(media_type: Any, view: Any) -> ApiError:
    """kube-apiserver's message names only what is accepted; kubectl itself prefixes
    `<type> is not supported by <GVK>: `, so repeating that here would print it twice."""
    accepted = getattr(view, "accepted_media_types", ["application/json"])
    return ApiError(
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


# kube's verb for an HTTP method (apiserver's RequestInfoFactory), as its 405 names it.
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "GET": "get", "HEAD": "get"}


def method_not_allowed(context: dict[str, Any]) -> ApiError:
    request = context.get("request")
    view = context.get("view")
    rt = getattr(view, "rt", None)
    if rt is None:  # not a resource: kube's router answers its generic 405
        return errors.method_not_served()
    method = (request.method if request is not None else "") or ""
    verb = _VERBS.get(method, method.lower())
    if method == "DELETE":
        verb = "delete" if getattr(view, "kwargs", {}).get("name") else "deletecollection"
    return errors.method_not_supported(rt.plural, rt.group, verb)


def handle(exc: Exception, context: dict[str, Any]) -> HttpResponse | None:
    error = as_api_error(exc, context)
    if error is None:
        return None  # DRF re-raises; the request-id middleware answers with a 500 Status
    response = status_response(context["request"], error)
    if error.reason == "Unauthorized":
        response["WWW-Authenticate"] = 'Bearer realm="nodus"'
    return response
