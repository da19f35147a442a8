"""User regular expressions on RE2: linear time, refused constructs named with their fix."""

from __future__ import annotations

import time

import pytest

from runtimes.apimachinery import regexes

REDOS = "^(a+)+$"


@pytest.mark.parametrize(
    ("pattern", "construct", "fix"),
    [
        (r"^(a)\1$", "the backreference \\1", "Drop the backreference \\1"),
        (r"(?<n>a)\k<n>", "the named backreference", "Drop the named backreference"),
        (r"^(?=.*\d)", "the lookahead (?=…)", "Drop the lookahead (?=…)"),
        (r"^(?!x)", "the negative lookahead (?!…)", "Drop the negative lookahead"),
        (r"(?<=a)b", "the lookbehind (?<=…)", "Drop the lookbehind"),
        (r"(?<!a)b", "the negative lookbehind (?<!…)", "Drop the negative lookbehind"),
        (r"(?>a+)b", "the atomic group (?>…)", "Drop the atomic group"),
        (r"a++b", "the possessive quantifier ++", "Drop the final + of ++"),
        (r"a{2}+", "the possessive quantifier {2}+", "Drop the final + of {2}+"),
        (r"a{1001}", "the repetition {1001}", "at most 1000"),
        (r"abc\Z", "the escape \\Z", "instead of \\Z"),
        (r"[a-", "missing ]: [a-", "RE2 syntax"),
    ],
)
def test_it_names_the_construct_re2_refuses_and_how_to_fix_it(
    pattern: str, construct: str, fix: str
) -> None:
    refused = regexes.problem(pattern)
    assert refused is not None
    assert construct in refused.construct
    assert fix in refused.fix
    with pytest.raises(regexes.UnsupportedPattern) as caught:
        regexes.compile(pattern)
    assert caught.value.construct == refused.construct
    assert caught.value is not regexes.problem(pattern)  # a fresh error each time


@pytest.mark.parametrize(
    "pattern", ["^[a-z0-9]+$", r"^[\w.-]+/[\w.-]+$", r"(?i)abc", r"\p{L}+", r"\/", "(?<n>a)"]
)
def test_it_compiles_what_re2_can_run(pattern: str) -> None:
    assert regexes.problem(pattern) is None
    regexes.compile(pattern)


def test_it_answers_the_redos_pattern_in_linear_time() -> None:
    started = time.perf_counter()
    assert not regexes.search(REDOS, "a" * 28 + "!")
    assert not regexes.search(REDOS, "a" * 100_000 + "!")
    assert time.perf_counter() - started < 0.5
    assert regexes.search(REDOS, "aaaa")


def test_it_reads_ecma_unicode_escapes() -> None:
    assert regexes.search(r"^\u0041+$", "AAA")
    assert regexes.search(r"^\u{1F600}$", "\U0001f600")
    assert regexes.search(r"[\u00e0-\u00ff]", "é")
    # An escaped backslash followed by u is a literal "\u", not an escape.
    assert regexes.search(r"^\\u0041$", "\\u0041")
    assert not regexes.search(r"^\\u0041$", "A")


def test_it_searches_unanchored_as_json_schema_does() -> None:
    assert regexes.search("b", "abc")
    assert not regexes.search("^b", "abc")
    # $ is the very end, as in ECMA-262 (Python's re also matches before a final newline).
    assert not regexes.search("a$", "a\n")


def test_it_keeps_each_pattern_compiled_once() -> None:
    first = regexes.compile("^cached-[0-9]+$")
    assert regexes.compile("^cached-[0-9]+$") is first
