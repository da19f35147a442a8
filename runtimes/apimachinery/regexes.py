"""Regular expressions that users write, run on RE2: linear time whatever the pattern or input.

A runtime's parameter schema carries regular expressions (``pattern``, the names in
``patternProperties``, a value whose ``format`` is ``regex``). Python's ``re`` backtracks:
``^(a+)+$`` against 28 a's and a ``!`` takes seconds, and a few more characters take minutes, on
the one thread that serves everyone. Every user-supplied pattern is therefore compiled and
matched here, with google-re2, whose automata never backtrack: a match costs time linear in the
input.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import re2

# The price is RE2's syntax. JSON Schema says patterns are ECMA-262; RE2 differs as follows, and
# the choice is deliberate:
#
# * Refused (RE2 cannot express them without backtracking): backreferences (``\1``, ``\k<n>``),
#   lookahead and lookbehind (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), atomic groups (``(?>``) and
#   possessive quantifiers (``a++``). A schema using one is refused at admission (422 naming the
#   field, with a `fix` saying which construct to drop): `UnsupportedPattern` says which.
# * Repetition counts are at most 1000 (``a{1001}`` is refused), and nested counts multiply.
# * ECMA's ``\uXXXX`` and ``\u{X…}`` escapes are rewritten to RE2's ``\x{X…}`` before compiling,
#   so the common case reads as it does in a browser.
# * ``\s`` is ASCII whitespace in RE2 (ECMA adds the Unicode spaces); ``.`` excludes only ``\n``
#   (ECMA also ``\r``, U+2028 and U+2029); ``$`` matches only at the very end in both (unlike
#   Python's ``re``, which also matches before a final newline). RE2 accepts some syntax ECMA does
#   not (``(?i)``, ``\pL``, ``\A``, ``\z``); such patterns mean what RE2 says.
#
# Compiled patterns are kept in an LRU (`COMPILED_MAX`), each within `PROGRAM_MAX_BYTES` of RE2
# memory (program and DFA cache), so the cache's worst case is bounded too (256 patterns of 1 MiB);
# a pattern whose program does not fit is refused like a syntax error.

# RE2 memory per compiled pattern (its program plus the DFA cache it fills while matching).
# Parameter patterns are short (a schema is at most 64 KiB); 1 MiB holds any of them with room
# to spare, and RE2 falls back to its (still linear) NFA when the DFA cache is full.
PROGRAM_MAX_BYTES = 1 << 20
# Distinct patterns kept compiled: parameter schemas are few and reused by every request.
COMPILED_MAX = 256
SYNTAX_URL = "https://github.com/google/re2/wiki/Syntax"

_OPTIONS = re2.Options()
_OPTIONS.max_mem = PROGRAM_MAX_BYTES
_OPTIONS.log_errors = False  # a refused pattern is the user's error, not the server's log's


class UnsupportedPattern(ValueError):
    """A pattern RE2 cannot run: `construct` names what to drop, `fix` says how."""

    def __init__(self, pattern: str, construct: str, fix: str) -> None:
        super().__init__(f"RE2 cannot run this pattern: {construct}")
        self.pattern = pattern
        self.construct = construct
        self.fix = fix


@dataclass(frozen=True)
class _Refusal:
    # What the cache keeps for a refused pattern: plain data, so no traceback is retained.
    construct: str
    fix: str


# RE2's error text (after the colon it quotes the offending piece) -> what it is, how to fix it.
_LOOKAROUND = {
    "(?=": "the lookahead (?=…)",
    "(?!": "the negative lookahead (?!…)",
    "(?<=": "the lookbehind (?<=…)",
    "(?<!": "the negative lookbehind (?<!…)",
    "(?>": "the atomic group (?>…)",
}
_LOOKAROUND_FIX = (
    "Drop {construct}: RE2 has no lookaround. Match the text itself instead, or move the "
    "condition into another keyword (an enum, a second property, minLength)."
)
_GENERIC_FIX = "Rewrite it in RE2 syntax (" + SYNTAX_URL + ")."


def _explain(message: str) -> _Refusal:
    problem, _, piece = message.partition(": ")
    if problem == "invalid escape sequence" and piece[1:2].isdigit():
        construct = f"the backreference {piece}"
        fix = (
            f"Drop the backreference {piece}: RE2 has no backreferences. Repeat the group's own "
            "pattern instead (e.g. (ab)\\1 becomes (ab)(ab))."
        )
    elif problem == "invalid escape sequence" and piece == "\\k":
        construct = "the named backreference \\k<…>"
        fix = "Drop the named backreference \\k<…>: RE2 has no backreferences."
    elif problem == "invalid escape sequence" and piece == "\\Z":
        construct = "the escape \\Z"
        fix = "Write $ (or \\z) for the end of the text instead of \\Z."
    elif problem == "invalid perl operator" and piece in _LOOKAROUND:
        construct = _LOOKAROUND[piece]
        fix = _LOOKAROUND_FIX.format(construct=construct)
    elif problem == "bad repetition operator" and len(piece) > 1 and piece.endswith("+"):
        construct = f"the possessive quantifier {piece}"
        fix = (
            f"Drop the final + of {piece}: RE2 never backtracks, so {piece[:-1]} alone means "
            "the same."
        )
    elif problem == "invalid repetition size":
        construct = f"the repetition {piece}"
        fix = (
            f"Make {piece} at most 1000 (RE2's limit; nested counts multiply), or use * or + "
            "with a maxLength."
        )
    elif problem.startswith("pattern too large"):
        construct = f"a program larger than {PROGRAM_MAX_BYTES // 1024} KiB"
        fix = "Shorten the pattern: fewer or smaller counted repetitions and alternatives."
    else:
        construct = message or "a syntax error"
        fix = _GENERIC_FIX
    return _Refusal(construct, fix)


def _ecma_escapes(pattern: str) -> str:
    r"""ECMA-262's \uXXXX and \u{X…} as RE2's \x{X…}; every other escape stays as written."""
    if "\\u" not in pattern:
        return pattern
    out: list[str] = []
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char != "\\" or i + 1 == size:
            out.append(char)
            i += 1
            continue
        follower = pattern[i + 1]
        if follower == "u":
            digits = pattern[i + 2 : i + 6]
            if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
                out.append(f"\\x{{{digits}}}")
                i += 6
                continue
            if pattern[i + 2 : i + 3] == "{":
                end = pattern.find("}", i + 3)
                if end != -1:
                    out.append(f"\\x{{{pattern[i + 3 : end]}}}")
                    i = end + 1
                    continue
        out.append(char + follower)  # an escape pair is copied whole: \\u is not \u
        i += 2
    return "".join(out)


@functools.lru_cache(maxsize=COMPILED_MAX)
def _compiled(pattern: str) -> re2._Regexp | _Refusal:
    try:
        return re2.compile(_ecma_escapes(pattern), _OPTIONS)
    except re2.error as error:
        raw = error.args[0] if error.args else b""
        message = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        return _explain(message)


def compile(pattern: str) -> re2._Regexp:
    """The compiled pattern (cached); raises `UnsupportedPattern` when RE2 cannot run it."""
    compiled = _compiled(pattern)
    if isinstance(compiled, _Refusal):
        raise UnsupportedPattern(pattern, compiled.construct, compiled.fix)
    return compiled


def problem(pattern: str) -> UnsupportedPattern | None:
    """Why RE2 cannot run ``pattern``, or None when it can."""
    compiled = _compiled(pattern)
    if isinstance(compiled, _Refusal):
        return UnsupportedPattern(pattern, compiled.construct, compiled.fix)
    return None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (JSON Schema's reading: unanchored)."""
    return compile(pattern).search(text) is not None
