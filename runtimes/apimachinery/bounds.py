"""Bounds on what a request body may decode to: nesting depth and node count, checked early.

The byte limit (``NODUS_MAX_BODY_BYTES``, 3 MiB as kube-apiserver's) bounds what a client sends,
not what it decodes to: 1 KB of YAML aliases once expanded to 6.7 GB, and 10,000 levels of
nesting once ended in a RecursionError (500) in code that walks objects recursively. Every body
the server decodes (JSON by `jsoncodec`, YAML by `yamlcodec.load_body`, the console's editor and
its JSON fields) is therefore checked against these bounds *before* the object is built, and a
patch's result is checked again before anything walks it.
"""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery import errors

# =========================  =========  =====================================================
# Limit                      Value      Why
# =========================  =========  =====================================================
# `MAX_DEPTH`                100        Levels of objects and arrays (the top level is 1).
#                                       kube-apiserver's decoders allow 10,000, which Go's
#                                       stacks absorb; validation here recurses in Python (about
#                                       ten frames a level against a 1,000-frame stack), and no
#                                       TrainingRuntime needs more than about 70 (free-form
#                                       parameters are capped at 64 levels, managedFields add
#                                       four).
# `MAX_NODES`                250,000    Scalars, keys, objects and arrays together. The largest
#                                       object the other limits allow (256 KiB of annotations
#                                       and 64 KiB each of labels and parameters as one-character
#                                       entries, plus the managedFields that track them) has about
#                                       220,000. At most about 72 bytes per node (an empty
#                                       object), that bounds a decoded body to about 18 MB,
#                                       where 3 MiB of ``[{},{},…]`` would otherwise build 72 MB.
# `MAX_JSON_PATCH_OPS`       10,000     Operations in one JSON patch: kube-apiserver's
#                                       ``maxJSONPatchOperations``, answered 413 as it does.
# `MAX_COPIED_NODES`         250,000    Nodes all ``copy`` operations of one JSON patch may
#                                       duplicate (evanphx/json-patch's accumulated copy limit,
#                                       counted in nodes): 20 copies of the document into itself
#                                       would otherwise grow it 2^20 times.
# YAML anchors and aliases   refused    Kubernetes caps alias expansion; refusing them outright is
#                                       simpler and costs no client anything (kubectl and client
#                                       libraries send JSON, or YAML without anchors).
# =========================  =========  =====================================================
#
# `BoundExceeded` carries the Status reason (400 BadRequest for depth and syntax, 413
# RequestEntityTooLarge for size) and a `fix`; the API raises it as an `ApiError`.

MAX_DEPTH = 100
MAX_NODES = 250_000
MAX_JSON_PATCH_OPS = 10_000
MAX_COPIED_NODES = MAX_NODES
_CONTAINERS = (dict, list)


class BoundExceeded(ValueError):
    """A body (or a patch's result) past one of the bounds; `api_error` is its Status."""

    def __init__(self, message: str, fix: str, reason: str = "BadRequest") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.reason = reason

    def api_error(self) -> errors.ApiError:
        return errors.ApiError(self.reason, self.message, fix=self.fix)


def too_deep(what: str = "the body", limit: int = MAX_DEPTH) -> BoundExceeded:
    return BoundExceeded(
        f"{what} is nested more than {limit} levels deep",
        f"Flatten it: objects and arrays may nest at most {limit} levels.",
    )


def too_many_nodes(what: str = "the body", limit: int = MAX_NODES) -> BoundExceeded:
    return BoundExceeded(
        f"{what} holds more than {limit} values (keys, scalars, objects and arrays)",
        "Send a smaller object: no TrainingRuntime needs this many values.",
        "RequestEntityTooLarge",
    )


def depth_of(value: Any, stop_after: int = MAX_DEPTH) -> int:
    """Levels of objects and arrays in ``value`` (a scalar is 0), counted without recursion;
    counting stops at ``stop_after + 1``, which is all a bound needs to know."""
    depth = 0
    level = [value] if isinstance(value, _CONTAINERS) else []
    while level and depth <= stop_after:
        depth += 1
        below: list[Any] = []
        keep = below.append
        for container in level:
            for item in container.values() if isinstance(container, dict) else container:
                if isinstance(item, _CONTAINERS):
                    keep(item)
        level = below
    return depth


def count_nodes(value: Any, stop_after: int = MAX_NODES) -> int:
    """Keys, scalars, objects and arrays in ``value``, as the decoders count them; counting
    stops past ``stop_after``."""
    count = 0
    pending = [value]
    while pending and count <= stop_after:
        item = pending.pop()
        count += 1
        if isinstance(item, dict):
            count += len(item)  # the keys
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return count


def check(value: Any, what: str = "the body") -> None:
    """Raises `BoundExceeded` when a decoded value is past `MAX_DEPTH` or `MAX_NODES`."""
    if depth_of(value) > MAX_DEPTH:
        raise too_deep(what)
    if count_nodes(value) > MAX_NODES:
        raise too_many_nodes(what)
