"""The `format`s jsonschema checks looser or stricter than their RFCs: time, date-time, email.

RFC 3339 allows a leap second (`23:59:60` in UTC, whatever the offset says), which Python's
parsers refuse; RFC 5321 refuses dots at either end of a mailbox's local part, two in a row, and
domains or address literals that are not one, which jsonschema's `email` (an `@` anywhere)
accepts. These patterns are ours, fixed and anchored: no user text is ever a pattern here.
"""

from __future__ import annotations

import calendar
import ipaddress
import re

_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(\.\d+)?(?:([Zz])|([+-])(\d\d):(\d\d))", re.ASCII)
_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)", re.ASCII)
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_DOT_STRING = re.compile(rf"{_ATOM}(?:\.{_ATOM})*", re.ASCII)
_QUOTED = re.compile(r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"', re.ASCII)
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)


def is_time(text: object) -> bool:
    """RFC 3339 `full-time`: two-digit fields, an offset, and a leap second only at 23:59 UTC."""
    if not isinstance(text, str):
        return True
    found = _TIME.fullmatch(text)
    if found is None:
        return False
    hour, minute, second = int(found[1]), int(found[2]), int(found[3])
    offset_hour, offset_minute = int(found[7] or 0), int(found[8] or 0)
    if hour > 23 or minute > 59 or second > 60 or offset_hour > 23 or offset_minute > 59:
        return False
    if second == 60:
        sign = -1 if found[6] == "+" else 1
        utc = (hour * 60 + minute + sign * (offset_hour * 60 + offset_minute)) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def is_date(text: object) -> bool:
    """RFC 3339 `full-date`: a day that exists in its month (29 February in leap years)."""
    if not isinstance(text, str):
        return True
    found = _DATE.fullmatch(text)
    if found is None:
        return False
    year, month, day = int(found[1]), int(found[2]), int(found[3])
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]


def is_date_time(text: object) -> bool:
    """RFC 3339 `date-time`: a date, `T` (or `t`), and a time."""
    if not isinstance(text, str):
        return True
    date, separator, time = text[:10], text[10:11], text[11:]
    return separator in ("T", "t") and is_date(date) and is_time(time)


def is_email(text: object) -> bool:
    """RFC 5321 `Mailbox`: a dot-string or quoted local part, `@`, a domain or address literal."""
    if not isinstance(text, str):
        return True
    local, at, domain = text.rpartition("@")
    if not at or not local or len(local) > 64 or len(domain) > 255:
        return False
    if not (_DOT_STRING.fullmatch(local) or _QUOTED.fullmatch(local)):
        return False
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        try:
            if literal.startswith("IPv6:"):
                ipaddress.IPv6Address(literal[5:])
            else:
                ipaddress.IPv4Address(literal)
        except ValueError:
            return False
        return True
    return all(_LABEL.fullmatch(label) for label in domain.split("."))
