"""Shard selectors (KEP-5866): FNV-1a 64, the shardRange grammar, kube's messages, bounded work."""

from __future__ import annotations

import contextlib
import random

import pytest

from runtimes.apimachinery.selectors import SelectorError
from runtimes.apimachinery.selectors.shards import (
    FULL_END,
    NAMESPACE,
    UID,
    field_hash,
    fnv1a_64,
    parse_shard_selector,
)

LOW = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
HIGH = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # The FNV reference test suite (http://www.isthe.com/chongo/src/fnv/test_fnv.c).
        (b"", 0xCBF29CE484222325),  # the offset basis
        (b"a", 0xAF63DC4C8601EC8C),
        (b"b", 0xAF63DF4C8601F1A5),
        (b"c", 0xAF63DE4C8601EFF2),
        (b"foo", 0xDCB27518FED9D577),
        (b"foobar", 0x85944171F73967E8),
    ],
)
def test_fnv1a_64_matches_the_reference_vectors(data: bytes, expected: int) -> None:
    assert fnv1a_64(data) == expected


def test_a_field_is_hashed_over_its_utf8_bytes() -> None:
    # Go hashes []byte(value): the UTF-8 encoding, not code points or UTF-16.
    assert field_hash("é") == fnv1a_64("é".encode())
    assert field_hash("é") != fnv1a_64(b"\xe9")


@pytest.mark.parametrize(
    ("text", "key", "ranges"),
    [
        (LOW, UID, [("0x0000000000000000", "0x8000000000000000")]),
        (HIGH, UID, [("0x8000000000000000", FULL_END)]),
        (
            "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')",
            NAMESPACE,
            [("0x00000000000000aa", "0x00000000000000ff")],
        ),
        (
            f"{LOW} || {HIGH}",
            UID,
            [("0x0000000000000000", "0x8000000000000000"), ("0x8000000000000000", FULL_END)],
        ),
        (
            "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')",
            UID,
            [("0x0000000000000000", "0x8000000000000000")],
        ),
        (
            "  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  "
            '"0x8000000000000000" )  ',
            UID,
            [("0x0000000000000000", "0x8000000000000000")],
        ),
        (
            f"({LOW}) || ({HIGH})",
            UID,
            [("0x0000000000000000", "0x8000000000000000"), ("0x8000000000000000", FULL_END)],
        ),
    ],
)
def test_it_reads_valid_selectors(text: str, key: str, ranges: list[tuple[str, str]]) -> None:
    selector = parse_shard_selector(text)
    assert selector is not None
    assert selector.key == key
    assert [(r.start, r.end) for r in selector.ranges] == ranges
    assert selector.text == text  # echoed as the request gave it


def test_its_canonical_form_is_kubes_and_round_trips() -> None:
    selector = parse_shard_selector(f" ({LOW})||{HIGH} ")
    assert selector is not None
    assert str(selector) == f"{LOW} || {HIGH}"
    again = parse_shard_selector(str(selector))
    assert again is not None
    assert str(again) == str(selector)


def test_an_absent_selector_is_none_and_a_blank_one_is_an_error() -> None:
    assert parse_shard_selector("") is None
    with pytest.raises(SelectorError, match="empty shard selector is not allowed"):
        parse_shard_selector("   ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
            "hexStart must have '0x' prefix, got \"0000000000000000\"",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '8000000000000000')",
            "hexEnd must have '0x' prefix",
        ),
        (
            "shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
            "hexStart: hex value is required after '0x'",
        ),
        (
            "shardRange(object.metadata.name, '0x00', '0x80')",
            'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
            "object.metadata.namespace",
        ),
        (
            "shardRange(metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "metadata.uid"',
        ),
        (
            "invalidFunc(object.metadata.uid, '0x00', '0x80')",
            'unsupported function "invalidFunc"; only shardRange() and || are allowed',
        ),
        (
            "shardRange(object.metadata.uid, '0x000000000000000000', '0x80')",
            'hexStart: hex value too long (18 chars, max 17): "000000000000000000"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0g', '0x80')",
            'hexStart: invalid hex character "g" in "0x0g"',
        ),
        (
            "shardRange(object.metadata.uid, '0xABCDEF0000000000', '0xffffffffffffffff')",
            'hexStart: invalid hex character "A"',  # lowercase only, as kube
        ),
        (
            f"{LOW} && {HIGH}",
            'unsupported function "_&&_"; only shardRange() and || are allowed',
        ),
        ("shardRange(object.metadata.uid, 0, 8)", "hexStart must be a string literal, got int64"),
        (
            "shardRange(object.metadata.uid, b'0x0000000000000000', '0x8000000000000000')",
            "hexStart must be a string literal, got []uint8",
        ),
        ("object.metadata.uid > '0x0'", 'unsupported function "_>_"'),
        ("shardRange(object.metadata.uid, '0x0')", "requires exactly 3 arguments, got 2"),
        (
            "shardRange(object.metadata.uid, hex(0), '0x8')",
            "hexStart must be a string literal (e.g. '0xff'), got expression kind call",
        ),
        (
            "shardRange('0x0', '0x0000000000000000', '0x8000000000000000')",
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), got "
            "expression kind literal",
        ),
        (
            f"{LOW} || shardRange(object.metadata.namespace, '0x8000000000000000', '{FULL_END}')",
            'all shard ranges must use the same field, got "object.metadata.uid" and '
            '"object.metadata.namespace"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean '
            '"0x0000000000000000"?)',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0xff')",
            "hexEnd must be a 0x-prefixed 16-digit hex value",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000001')",
            "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got "
            '"0x10000000000000001"',
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x8000000000000000",
        ),
        (
            "shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')",
            "shard range start 0xffffffffffffffff must be less than end",
        ),
        ("'0x00'", "unexpected expression kind literal; expected shardRange() call or ||"),
        (f"!{LOW}", 'unsupported function "!_"'),
        # Syntax errors, as CEL parse errors.
        (LOW[:-1], "CEL parse error: Syntax error: mismatched input"),
        (f"{LOW} ||", "CEL parse error: Syntax error:"),
        (f"{LOW} | {HIGH}", "CEL parse error: Syntax error: token recognition error"),
        (LOW.replace("000', '0x8", "0, '0x8"), "CEL parse error: Syntax error:"),
        (f"{LOW} {HIGH}", "CEL parse error: Syntax error: extraneous input"),
        ("shardRange(object.metadata.uid, '0x\\q', '0x8000000000000000')", "invalid escape"),
        (
            "namespace(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            "CEL parse error: reserved identifier: namespace",
        ),
    ],
)
def test_it_names_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_shard_selector(text)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "text", ["(" * 5000 + LOW + ")" * 5000, "shardRange(object.metadata.uid, " * 3000, "[" * 4000]
)
def test_deep_nesting_is_refused_before_any_walk(text: str) -> None:
    with pytest.raises(SelectorError, match="max recursion depth exceeded"):
        parse_shard_selector(text)


def test_any_token_soup_is_a_selector_error_never_a_crash() -> None:
    pieces = [
        "shardRange", "(", ")", ",", "'0x0000000000000000'", "'0x8000000000000000'",
        "object.metadata.uid", "||", "&&", "[", "]", "{", "}", ".", "!", "-", "1", "'", '"',
        "x", " ", "?", ":", "b'0x'", "\\", "r'a'", "'\\x4'", "0x", "1e", ".5", "in", "é",
    ]  # fmt: skip
    rng = random.Random(5866)
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
        with contextlib.suppress(SelectorError):
            parse_shard_selector(text)


def test_ranges_are_half_open_and_or_ed() -> None:
    # Four quarter ranges: every hash falls in exactly one; a range keeps [start, end).
    quarters = [
        parse_shard_selector(
            f"shardRange(object.metadata.uid, '0x{i << 62:016x}', "
            f"'{FULL_END if i == 3 else f'0x{(i + 1) << 62:016x}'}')"
        )
        for i in range(4)
    ]
    for hashed in (0, (1 << 62) - 1, 1 << 62, 1 << 63, (1 << 64) - 1):
        owners = [i for i, q in enumerate(quarters) if q is not None and q.contains(hashed)]
        assert owners == [hashed >> 62]
    both = parse_shard_selector(
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || "
        "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"
    )
    assert both is not None
    assert [both.contains(h << 62) for h in range(4)] == [True, False, True, False]


def test_it_matches_on_the_named_field() -> None:
    uid = "7d1b4c2e-7f0a-4b4e-9a55-0d3f6f1a2b3c"
    namespace = "demo"
    by_uid = parse_shard_selector(LOW if field_hash(uid) < 1 << 63 else HIGH)
    assert by_uid is not None
    assert by_uid.matches(uid, "elsewhere")
    by_ns = parse_shard_selector(
        LOW.replace(UID, NAMESPACE)
        if field_hash(namespace) < 1 << 63
        else HIGH.replace(UID, NAMESPACE)
    )
    assert by_ns is not None
    assert by_ns.matches("any-uid", namespace)
    assert by_ns.matches("other-uid", namespace)
