"""JSON decoding of request bodies: orjson, within `bounds` checked before the object is built.

orjson stops at 1,024 levels and refuses NaN, infinities and invalid UTF-8, but it would build
whatever else 3 MiB of JSON describes: ``[{},{},…]`` is a million dicts. So the body's nodes are
counted in its bytes first (every value but the first follows a ``,`` or ``:``, or opens with
``[``/``{``), which costs a few ``bytes.count`` calls; only a body near the budget has its
strings masked for an exact count. Depth is measured on the decoded value, and only
when the body has enough brackets to be that deep at all.
"""

from __future__ import annotations

from typing import Any

import orjson

from runtimes.apimachinery import bounds

_WHITESPACE = b" \t\r\n"


class JSONError(ValueError):
    """The body is not JSON (orjson's message)."""


def _node_count(raw: bytes, exact: bool) -> int:
    """Values and keys in the JSON text ``raw`` (exact for valid JSON once strings are masked;
    an upper bound otherwise, as brackets and commas inside strings count too)."""
    text = raw
    if exact:
        # Escaped backslashes, then escaped quotes, become inert; every '"' left opens or closes
        # a string, so the even pieces between them are the structure (all in C, linear).
        inert = raw.replace(b"\\\\", b"__").replace(b'\\"', b"__")
        text = b"".join(inert.split(b'"')[::2]).translate(None, _WHITESPACE)
    containers = text.count(b"[") + text.count(b"{")
    separated = text.count(b",") + text.count(b":")
    empty = text.count(b"[]") + text.count(b"{}") if exact else 0
    return containers + separated + 1 - empty


def loads(raw: bytes, what: str = "the body") -> Any:
    """The value of the JSON document ``raw``; raises `JSONError` or `bounds.BoundExceeded`."""
    if (
        _node_count(raw, exact=False) > bounds.MAX_NODES
        and _node_count(raw, exact=True) > bounds.MAX_NODES
    ):
        raise bounds.too_many_nodes(what)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if str(error).startswith("depth limit exceeded"):
            raise bounds.too_deep(what) from None
        raise JSONError(str(error)) from None
    # Depth needs a bracket per level: most bodies have too few to check at all.
    if raw.count(b"[") + raw.count(b"{") > bounds.MAX_DEPTH and (
        bounds.depth_of(value) > bounds.MAX_DEPTH
    ):
        raise bounds.too_deep(what)
    return value
