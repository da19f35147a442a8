"""Shard selectors (KEP-5866, ``ShardedListAndWatch``): which slice of a collection a client owns.

The ``shardSelector`` list option is a small CEL expression::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
    shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') ||
        shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from runtimes.apimachinery.selectors.celexpr import (
    CALL,
    IDENT,
    LITERAL,
    SELECT,
    Node,
    operands,
)
from runtimes.apimachinery.selectors.labels import SelectorError

# An object belongs to the shard when the 64-bit FNV-1a hash of the named field (the UTF-8 bytes
# of ``metadata.uid`` or ``metadata.namespace``) falls in ``[start, end)`` of any of the ranges.
# Bounds are ``'0x'`` and exactly 16 lowercase hex digits, or ``'0x10000000000000000'`` (2^64)
# as the exclusive end of the last shard; every range of one selector names the same field.
#
# kube-apiserver parses the expression with cel-go and walks the tree without evaluating it
# (``apiserver/pkg/sharding/parser.go``); its messages, quoted here, say what is wrong. We read
# the same language without a CEL runtime (``selectors.celexpr``: bounded work for any input,
# whose length the API caps at ``listoptions.MAX_SELECTOR_BYTES``) and walk the operands of its
# ``||`` chain as kube does.

FNV_OFFSET_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 0x100000001B3
_MASK_64 = (1 << 64) - 1

UID = "object.metadata.uid"
NAMESPACE = "object.metadata.namespace"
FIELDS = (UID, NAMESPACE)
FULL_END = "0x10000000000000000"  # 2^64: the exclusive end of the whole hash space
FUNCTION = "shardRange"


def fnv1a_64(data: bytes) -> int:
    """FNV-1a, 64 bits (Go's ``hash/fnv.New64a``)."""
    value = FNV_OFFSET_64
    for byte in data:
        value = ((value ^ byte) * FNV_PRIME_64) & _MASK_64
    return value


@functools.lru_cache(maxsize=4096)
def field_hash(value: str) -> int:
    """The hash of a field value as kube computes it: over the string's UTF-8 bytes.

    Memoised: namespaces repeat across objects, and every sharded watcher of one change asks
    for the same uid's hash (the watch cache keeps each entry's uid hash with the entry)."""
    return fnv1a_64(value.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class ShardRange:
    start: str  # as written: '0x' + 16 hex digits, or FULL_END for `end`
    end: str

    @property
    def bounds(self) -> tuple[int, int]:
        return int(self.start, 16), int(self.end, 16)


@dataclass(frozen=True)
class ShardSelector:
    """A parsed selector: one field and the ranges of its hash the shard owns."""

    text: str  # the request's selector, echoed back in ListMeta.shardInfo.selector
    key: str
    ranges: tuple[ShardRange, ...]
    _bounds: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bounds", tuple(r.bounds for r in self.ranges))

    def contains(self, hashed: int) -> bool:
        return any(low <= hashed < high for low, high in self._bounds)

    def matches(self, uid: str, namespace: str) -> bool:
        return self.contains(field_hash(uid if self.key == UID else namespace))

    def __str__(self) -> str:
        """The canonical form kube's Selector.String() gives."""
        return " || ".join(f"{FUNCTION}({self.key}, '{r.start}', '{r.end}')" for r in self.ranges)


def _go_quote(text: str) -> str:
    """``%q`` as Go writes it for the strings these messages quote."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif not char.isprintable():
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GO_ESCAPES["\v"] = "\\v"


# -- the walk ----------------------------------------------------------------------------------

_GO_TYPES = {
    "int": "int64",
    "uint": "uint64",
    "double": "float64",
    "bool": "bool",
    "bytes": "[]uint8",
    "null": "structpb.NullValue",
}


def _hex_literal(node: Node, name: str) -> str:
    if node.kind != LITERAL or node.literal is None:
        raise SelectorError(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind {node.kind}"
        )
    token = node.literal
    if token.kind != "string":
        raise SelectorError(f"{name} must be a string literal, got {_GO_TYPES[token.kind]}")
    value: str = token.value
    if not value.startswith("0x"):
        raise SelectorError(f"{name} must have '0x' prefix, got {_go_quote(value)}")
    digits = value[2:]
    if not digits:
        raise SelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise SelectorError(
            f"{name}: hex value too long ({len(digits)} chars, max 17): {_go_quote(digits)}"
        )
    for char in digits:
        if char not in "0123456789abcdef":
            raise SelectorError(
                f"{name}: invalid hex character {_go_quote(char)} in {_go_quote(value)}"
            )
    if len(digits) == 17:
        if value != FULL_END:
            raise SelectorError(
                f"{name}: 17-digit hex value must be '{FULL_END}' (2^64), got {_go_quote(value)}"
            )
    elif len(digits) != 16:
        padded = "0x" + "0" * (16 - len(digits)) + digits
        raise SelectorError(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {_go_quote(value)} "
            f"(did you mean {_go_quote(padded)}?)"
        )
    return value


def _requirement(node: Node) -> tuple[str, ShardRange]:
    if node.kind != CALL:
        raise SelectorError(
            f"unexpected expression kind {node.kind}; expected {FUNCTION}() call or || operator"
        )
    if node.function != FUNCTION:
        raise SelectorError(
            f"unsupported function {_go_quote(node.function)}; only {FUNCTION}() and || are allowed"
        )
    if len(node.args) != 3:
        raise SelectorError(f"{FUNCTION}() requires exactly 3 arguments, got {len(node.args)}")
    target = node.args[0]
    if target.kind not in (IDENT, SELECT) or not target.path:
        raise SelectorError(
            f"{FUNCTION}() first argument: expected field path (e.g. {UID}), got expression "
            f"kind {target.kind if target.kind not in (IDENT, SELECT) else CALL}"
        )
    if target.path not in FIELDS:
        raise SelectorError(
            f"unsupported field path {_go_quote(target.path)}; supported: {', '.join(FIELDS)}"
        )
    start = _hex_literal(node.args[1], "hexStart")
    end = _hex_literal(node.args[2], "hexEnd")
    if not (len(start), start) < (len(end), end):
        raise SelectorError(f"shard range start {start} must be less than end {end}")
    return target.path, ShardRange(start, end)


def parse_shard_selector(text: str) -> ShardSelector | None:
    """The selector, or None when the option is absent (empty); `SelectorError` when malformed."""
    if text == "":
        return None
    expression = text.strip()
    if not expression:
        raise SelectorError(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists"
        )
    nodes = operands(expression)
    keys: list[str] = []
    ranges: list[ShardRange] = []
    for node in nodes:
        key, shard_range = _requirement(node)
        keys.append(key)
        ranges.append(shard_range)
    for other in keys[1:]:
        if other != keys[0]:
            raise SelectorError(
                f"all shard ranges must use the same field, got {_go_quote(keys[0])} and "
                f"{_go_quote(other)}"
            )
    return ShardSelector(text, keys[0], tuple(ranges))
