"""Times as kube consoles show them: a relative age ("3m") with the absolute time on hover.

Template filters, registered as builtins in settings (no ``{% load %}``): ``age`` is kubectl's
AGE column (45s, 3m, 5h, 12d), ``absolute_time`` the UTC time with its zone for the ``title``,
``iso_time`` the machine-readable ``datetime`` attribute. Each takes an RFC 3339 string (what
objects store) or a datetime, and answers "" for anything else.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils import timezone

register = template.Library()


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, str) and value:
        try:
            found = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def age_between(then: datetime, now: datetime) -> str:
    """kubectl's short age: whole seconds under 2 minutes, minutes under 2 hours, hours under
    2 days, then days (a clock skew into the future reads 0s)."""
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


@register.filter
def age(value: Any) -> str:
    then = _when(value)
    return age_between(then, timezone.now()) if then else ""


@register.filter
def absolute_time(value: Any) -> str:
    then = _when(value)
    return then.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if then else ""


@register.filter
def iso_time(value: Any) -> str:
    then = _when(value)
    return then.astimezone(UTC).isoformat().replace("+00:00", "Z") if then else ""
