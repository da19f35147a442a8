"""The console pages' side of endpoint authorization: `requires(access)` on every view.

The declaration is checked by `runtimes.registry.authorization.check`, the function the API and
both websockets use, with the project and name from the URL. Pages answer as pages: an anonymous
caller is sent to sign in (Django's `login_required`, as before), and a caller whose role falls
short gets what the view's `denied` gives, by default a 404, so a page about something the
caller may not see does not tell it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase

from runtimes.apimachinery import errors
from runtimes.registry import authorization
from runtimes.registry.authorization import Access
from runtimes.storage import actor

View = TypeVar("View", bound=Callable[..., HttpResponseBase])
Denied = Callable[..., HttpResponseBase]


def hidden(message: str) -> Denied:
    """A denial that answers 404, as for something that does not exist."""

    def deny(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        raise Http404(message)

    return deny


NOT_FOUND = hidden("not found")


def requires(access: Access, denied: Denied = NOT_FOUND) -> Callable[[View], View]:
    """Serves the view only to callers `access` admits; `denied` gets the view's arguments."""

    def decorate(view: View) -> View:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            try:
                authorization.check(
                    request.user,
                    access,
                    request.method or "GET",
                    kwargs.get("project", ""),
                    kwargs.get("name", ""),
                )
            except errors.ApiError:
                return denied(request, *args, **kwargs)
            user = request.user
            caller = user.get_username() if user.is_authenticated else ""
            with actor.acting(actor.Actor(caller)):
                return view(request, *args, **kwargs)

        guarded: Any = checked if access.admits_anonymous else login_required(checked)
        guarded.access = access
        return guarded  # type: ignore[no-any-return]

    return decorate
