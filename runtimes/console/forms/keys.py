"""Form field names for places in a JSON value, and back.

A value's place is a path of property names and array indices; its form name joins them with
dots under a root (``p.lora.r``, ``p.tags.0``). Dots and percent signs inside property names are
percent-encoded so every name splits back unambiguously. Suffixes starting with ``$`` carry a
widget's bookkeeping (``p.tags.$len``, ``p.optimizer.$variant``) and cannot clash with a
property, whose `$` would be encoded.
"""

from __future__ import annotations

from runtimes.registry.trainingruntime.schema import path_segments

ROOT = "p"
Path = tuple[str | int, ...]


def encode(segment: str | int) -> str:
    if isinstance(segment, int):
        return str(segment)
    return segment.replace("%", "%25").replace(".", "%2E").replace("$", "%24")


def decode(segment: str) -> str:
    return segment.replace("%2E", ".").replace("%24", "$").replace("%25", "%")


def child(key: str, segment: str | int) -> str:
    return f"{key}.{encode(segment)}"


def key_for(path: Path, root: str = ROOT) -> str:
    return ".".join([root, *(encode(s) for s in path)])


def path_of(key: str) -> list[str]:
    """The raw segments after the root (indices stay strings: the value decides)."""
    return [decode(s) for s in key.split(".")[1:]]


def key_for_field(field: str, prefix: str = "parameters", root: str = ROOT) -> str:
    """The form name for a FieldError path such as ``parameters.lora.targetModules[2]``."""
    segments = path_segments(field)
    if segments and segments[0] == prefix:
        segments = segments[1:]
    parts = [s[1:-1] if s.startswith("[") else s for s in segments]
    return ".".join([root, *(encode(p if index(p) is None else int(p)) for p in parts)])


def index(segment: str) -> int | None:
    """The array index a segment names, or None. Only ASCII digits, at most nine of them: a
    posted name is the client's text, and int() refuses superscripts and over 4,300 digits."""
    if segment.isascii() and segment.isdigit() and len(segment) <= 9:
        return int(segment)
    return None


def parent(key: str) -> str | None:
    return key.rsplit(".", 1)[0] if "." in key else None
