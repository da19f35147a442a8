"""YAML decoding: libyaml's speed, PyYAML's safe types and PyYAML's error messages.

Every YAML document the app reads (request bodies, the publish editor, seed files, the
accelerator catalog) is decoded here, with ``yaml.CSafeLoader`` when PyYAML was built against
libyaml and ``yaml.SafeLoader`` when it was not. Both construct the same safe types.

A document libyaml refuses is decoded again by the pure-Python loader: libyaml words its errors
differently (``did not find expected ',' or ']'``, no quoted line) and places some of them on
another line, while clients and the editor have always been shown PyYAML's; errors are rare, so
the second parse costs nothing in the common case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

YAMLError = yaml.YAMLError

Loader = type[yaml.SafeLoader] | type[yaml.CSafeLoader]
LOADER: Loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


def load(text: str | bytes) -> Any:
    """The one document in ``text`` (None for an empty one)."""
    # Both loaders are safe ones (no Python objects), which ruff cannot see through the variable.
    return _decode(lambda loader: yaml.load(text, Loader=loader))  # noqa: S506


def load_all(text: str | bytes) -> list[Any]:
    """Every document in ``text``, in order (None for empty ones)."""
    return _decode(lambda loader: list(yaml.load_all(text, Loader=loader)))


def compose(text: str | bytes) -> yaml.Node | None:
    """The node tree of the one document in ``text``, with each node's position."""
    return _decode(lambda loader: yaml.compose(text, Loader=loader))


def _decode[T](run: Callable[[Loader], T]) -> T:
    try:
        return run(LOADER)
    # libyaml encodes str input to UTF-8 first, so a lone surrogate fails there, not as YAML.
    except (yaml.YAMLError, UnicodeEncodeError) as fast_error:
        if LOADER is yaml.SafeLoader:
            raise
        try:
            return run(yaml.SafeLoader)
        except RecursionError:
            # libyaml stops at 1000 levels of nesting with a YAML error; PyYAML would crash.
            raise fast_error from None
