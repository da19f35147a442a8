"""Ages as kubectl prints them: apimachinery's ``util/duration.HumanDuration``."""

from __future__ import annotations

from datetime import UTC, datetime


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """kube's HumanDuration: 45s, 5m, 3h, 2d, 1y."""
    if not timestamp:
        return "<unknown>"
    try:
        if len(timestamp) == 20 and timestamp[10] == "T" and timestamp[19] == "Z":
            # The one shape we write, parsed 50x faster than by strptime (Table lists of
            # thousands of objects parse one per row).
            then = datetime.fromisoformat(timestamp[:19]).replace(tzinfo=UTC)
        else:
            then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"
