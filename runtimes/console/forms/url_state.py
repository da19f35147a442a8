"""A form's state in its page's address, read back within bounds.

The Parameters form writes every field it would post into the query string as the user types
(``static/console/forms.js``), so a half-filled form can be shared and survives a reload; the
page reads it back here, on the server, so the link works without script too. A link is
anyone's text: its cost is bounded before any of it is parsed (length, number of fields, one
value's length, array lengths), and whatever is over a bound comes back as a problem the form
shows, never as an error page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from django.http import QueryDict

from runtimes.console.forms import keys

MAX_QUERY = 8192  # characters: what common proxies pass in a request line, with the path
MAX_FIELDS = 400  # name=value pairs; a form's own bookkeeping fields count too
MAX_VALUE = 4096  # characters of one value (a JSON textarea may be long, a link may not)
STATE_PREFIXES = (keys.ROOT + ".", "job.")


@dataclass
class Restored:
    """What a link restores: the fields (None when it carries no form state) and the problems
    found on the way, by form name (``p.lora.r``, ``job.model``) or for the link as a whole."""

    data: QueryDict | None = None
    problems: dict[str, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)
    submitted: bool = False  # the form's own submit button sent it (a browser without script)


def is_state(name: str) -> bool:
    return name.startswith(STATE_PREFIXES)


def unknown_fields(data: QueryDict, drawn: set[str], job_names: set[str]) -> str:
    """A sentence naming the link's fields that no widget of this form reads (a parameter the
    runtime no longer has, a typo), or "" when there are none."""
    unknown = []
    for name in data:
        base = name.split(".$", 1)[0]
        known = base in drawn if base.startswith(keys.ROOT + ".") else base in job_names
        if not known:
            unknown.append(name[:60])
    if not unknown:
        return ""
    shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    return f"This link names fields this form does not have, so they were left out: {shown}"


def restore(query: str) -> Restored:
    """The form state a query string carries, within the bounds above."""
    if not query:
        return Restored()
    if len(query) > MAX_QUERY:
        return Restored(
            general=[
                f"This link's form is {len(query):,} characters long; a link keeps at most "
                f"{MAX_QUERY:,}, so the form starts from the runtime's defaults"
            ]
        )
    # Counted before parsing: parse_qsl's own limit raises, and Django's answers 400.
    if query.count("&") + query.count(";") >= MAX_FIELDS:
        return Restored(
            general=[
                f"This link has more than {MAX_FIELDS} fields; a link keeps at most "
                f"{MAX_FIELDS}, so the form starts from the runtime's defaults"
            ]
        )
    restored = Restored(data=QueryDict(mutable=True))
    assert restored.data is not None
    for name, value in parse_qsl(query, keep_blank_values=True, separator="&"):
        if name == "_submit":
            restored.submitted = True
        if not is_state(name):
            continue
        target = name.split(".$", 1)[0]
        if len(value) > MAX_VALUE:
            restored.problems.setdefault(target, []).append(
                f"The link's value here is {len(value):,} characters long; at most "
                f"{MAX_VALUE:,} are kept, so it was left out"
            )
            continue
        count = keys.index(value) if name.endswith(".$len") else 0
        if count is None or count > MAX_FIELDS:
            restored.problems.setdefault(target, []).append(
                f"The link asks for {value[:12]!r} items; a link holds at most {MAX_FIELDS}, "
                "so the list was left out"
            )
            continue
        restored.data.appendlist(name, value)
    if not any(is_state(name) for name in restored.data):
        restored.data = None if not restored.problems else restored.data
    return restored
