"""The CEL subset shard selectors are written in: tokens, and the operands of the `||` chain."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtimes.apimachinery.selectors.labels import SelectorError

# kube-apiserver parses a ``shardSelector`` with cel-go and walks the tree without evaluating it
# (``apiserver/pkg/sharding/parser.go``). We need no CEL runtime for that: `operands` tokenizes
# the expression as CEL's lexer does (identifiers, operators, string, bytes and number literals
# with their escapes) and reads the top-level ``||`` chain flat, parentheses around it counted,
# not descended into. What else CEL allows (other operators, nested calls, lists, maps) is kept
# only as far as the walk needs to name it: a call and its function (``_&&_`` for ``&&``, as
# cel-go names operators), a field path, a literal and its type. Only a call's arguments are
# read by recursion, and brackets may nest at most `MAX_NESTING` deep, checked before any of it,
# so every input costs work linear in its length. Syntax errors read ``CEL parse error: Syntax
# error: ...`` as kube's do, quoting the input as ANTLR does, in our own words.

# -- tokens ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # ident, string, bytes, int, uint, double, bool, null, op, punct, end
    text: str
    pos: int
    value: Any = None


_OPERATORS = ("||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":")
_PUNCT = "()[]{},."
# CEL's names for its operators, as a call's function name reads in kube's messages.
_OPERATOR_FUNCTIONS = {
    "&&": "_&&_",
    "==": "_==_",
    "!=": "_!=_",
    "<": "_<_",
    "<=": "_<=_",
    ">": "_>_",
    ">=": "_>=_",
    "+": "_+_",
    "-": "_-_",
    "*": "_*_",
    "/": "_/_",
    "%": "_%_",
    "in": "@in",
    "?": "_?_:_",
    "[": "_[_]",
}
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "?": "?",
    '"': '"',
    "'": "'",
    "`": "`",
}


def _antlr(text: str) -> str:
    """The offending input as ANTLR's messages (and so cel-go's) quote it."""
    return "'" + (text or "<EOF>").replace("\n", "\\n") + "'"


def _syntax(message: str, pos: int) -> SelectorError:
    return SelectorError(f"CEL parse error: Syntax error: {message} (at offset {pos})")


def _is_ident_start(char: str) -> bool:
    return char == "_" or ("a" <= char <= "z") or ("A" <= char <= "Z")


def _is_ident_char(char: str) -> bool:
    return _is_ident_start(char) or (char.isdigit() and char.isascii())


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def tokens(self) -> list[Token]:
        found: list[Token] = []
        while True:
            token = self._next()
            found.append(token)
            if token.kind == "end":
                return found

    def _next(self) -> Token:
        text, n = self.text, len(self.text)
        while self.pos < n:
            char = text[self.pos]
            if char in " \t\n\r\f":
                self.pos += 1
            elif text.startswith("//", self.pos):  # a comment runs to the end of the line
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                break
        start = self.pos
        if start >= n:
            return Token("end", "", start)
        char = text[start]
        if _is_ident_start(char):
            end = start + 1
            while end < n and _is_ident_char(text[end]):
                end += 1
            word = text[start:end]
            if end < n and text[end] in "'\"" and word.lower() in ("r", "b", "rb", "br"):
                self.pos = end
                return self._string(start, raw="r" in word.lower(), as_bytes="b" in word.lower())
            self.pos = end
            if word in ("true", "false"):
                return Token("bool", word, start, word == "true")
            if word == "null":
                return Token("null", word, start)
            if word == "in":
                return Token("op", word, start)
            return Token("ident", word, start)
        if char in "'\"":
            return self._string(start, raw=False, as_bytes=False)
        if (char.isascii() and char.isdigit()) or (
            char == "."
            and start + 1 < n
            and text[start + 1].isascii()
            and text[start + 1].isdigit()
        ):
            return self._number(start)
        for op in _OPERATORS:
            if text.startswith(op, start):
                self.pos = start + len(op)
                return Token("op", op, start)
        if char in _PUNCT:
            self.pos = start + 1
            return Token("punct", char, start)
        raise _syntax(f"token recognition error at: {_antlr(char)}", start)

    def _number(self, start: int) -> Token:
        text, n = self.text, len(self.text)
        end = start
        if text.startswith(("0x", "0X"), start):
            end = start + 2
            while end < n and text[end] in "0123456789abcdefABCDEF":
                end += 1
            if end == start + 2:
                raise _syntax("malformed hexadecimal number", start)
            digits, base = text[start + 2 : end], 16
        else:
            while end < n and text[end].isascii() and text[end].isdigit():
                end += 1
            is_double = False
            if (
                end < n
                and text[end] == "."
                and end + 1 < n
                and text[end + 1].isascii()
                and text[end + 1].isdigit()
            ):
                is_double = True
                end += 1
                while end < n and text[end].isascii() and text[end].isdigit():
                    end += 1
            if end < n and text[end] in "eE":
                mark = end + 1
                if mark < n and text[mark] in "+-":
                    mark += 1
                if mark < n and text[mark].isascii() and text[mark].isdigit():
                    is_double = True
                    end = mark
                    while end < n and text[end].isascii() and text[end].isdigit():
                        end += 1
            if is_double:
                self.pos = end
                return Token("double", text[start:end], start, float(text[start:end]))
            digits, base = text[start:end], 10
        if end < n and text[end] in "uU":
            self.pos = end + 1
            return Token("uint", text[start : end + 1], start, int(digits, base))
        self.pos = end
        return Token("int", text[start:end], start, int(digits, base))

    def _string(self, start: int, raw: bool, as_bytes: bool) -> Token:
        text, n = self.text, len(self.text)
        quote = text[self.pos]
        delimiter = quote * 3 if text.startswith(quote * 3, self.pos) else quote
        i = self.pos + len(delimiter)
        out: list[str] = []
        while True:
            if i >= n:
                raise _syntax("unterminated string literal", start)
            if text.startswith(delimiter, i):
                i += len(delimiter)
                break
            char = text[i]
            if char in "\r\n" and len(delimiter) == 1:
                raise _syntax("newline in string literal", start)
            if char == "\\" and not raw:
                i = self._escape(i, out, start)
                continue
            out.append(char)
            i += 1
        self.pos = i
        value = "".join(out)
        return Token("bytes" if as_bytes else "string", text[start:i], start, value)

    def _escape(self, i: int, out: list[str], start: int) -> int:
        text = self.text
        code = text[i + 1 : i + 2]
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            return i + 2
        widths = {"x": 2, "X": 2, "u": 4, "U": 8}
        if code in widths:
            digits = text[i + 2 : i + 2 + widths[code]]
            if len(digits) == widths[code] and all(c in "0123456789abcdefABCDEF" for c in digits):
                value = int(digits, 16)
                if value <= 0x10FFFF:
                    out.append(chr(value))
                    return i + 2 + widths[code]
        elif code in "0123":
            digits = text[i + 1 : i + 4]
            if len(digits) == 3 and all(c in "01234567" for c in digits):
                out.append(chr(int(digits, 8)))
                return i + 4
        raise _syntax(f"invalid escape sequence in string literal: {_antlr(text[i : i + 2])}", i)


# -- structure ---------------------------------------------------------------------------------

# The expression kinds of cel-go's ast, as the messages name them.
CALL, IDENT, SELECT, LITERAL, LIST, MAP = "call", "ident", "select", "literal", "list", "map"


@dataclass
class Node:
    """One operand of the top-level `||` chain, or one argument of a call, as far as the walk
    needs to know it."""

    kind: str
    function: str = ""  # for a call: its name (an operator's CEL name)
    path: str = ""  # for an ident or a select chain rooted at an ident
    literal: Token | None = None
    args: list[Node] = field(default_factory=list)


_CLOSERS = {"(": ")", "[": "]", "{": "}"}
# CEL's reserved words: not an identifier or a function's name, though a selected field's.
_RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)


# Brackets may nest this deep: the walk of a call's arguments recurses once per level, so
# the cap is what bounds it (a real selector nests two deep: a group and a call).
MAX_NESTING = 32


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        depth = 0
        for token in tokens:
            if token.kind == "punct" and token.text in _CLOSERS:
                depth += 1
                if depth > MAX_NESTING:
                    raise SelectorError(
                        f"CEL parse error: max recursion depth exceeded: brackets nest more "
                        f"than {MAX_NESTING} deep (at offset {token.pos})"
                    )
            elif token.kind == "punct" and token.text in ")]}":
                depth -= 1
        self.tokens = tokens
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def _is(self, kind: str, text: str) -> bool:
        return self.tok.kind == kind and self.tok.text == text

    def terms(self) -> list[Node]:
        """The operands of the `||` chain, left to right, grouping parentheses dropped."""
        found: list[Node] = []
        depth = 0
        expect_term = True
        while True:
            tok = self.tok
            if expect_term:
                if self._is("punct", "("):
                    depth += 1
                    self.i += 1
                    continue
                found.append(self._operand(stop_at_or=True))
                expect_term = False
                continue
            if self._is("punct", ")") and depth:
                depth -= 1
                self.i += 1
            elif self._is("op", "||"):
                expect_term = True
                self.i += 1
            elif tok.kind == "end":
                if depth:
                    raise _syntax("missing ')' at '<EOF>'", tok.pos)
                return found
            elif tok.kind == "op" or self._is("punct", "["):
                # `(a) && b`: the operator, not its operands, is what the walk meets first.
                found[-1] = Node(CALL, function=_OPERATOR_FUNCTIONS.get(tok.text, tok.text))
                self.i += 1
                self._skip_expression(stop_at_or=True)
            else:
                raise _syntax(f"extraneous input {_antlr(tok.text)}", tok.pos)

    def _operand(self, stop_at_or: bool) -> Node:
        """One expression up to the next `||` (or `,` and `)` closing a call's argument): its
        primary, or, when an operator other than `||` follows or precedes it, that operator."""
        tok = self.tok
        if tok.kind == "op" and tok.text in ("!", "-"):
            if tok.text == "-" and self.tokens[self.i + 1].kind in ("int", "double"):
                # CEL reads a negative number as one literal.
                self.i += 2
                return Node(LITERAL, literal=self.tokens[self.i - 1])
            while self.tok.kind == "op" and self.tok.text in ("!", "-"):
                self.i += 1
            self._primary()
            self._skip_expression(stop_at_or)
            return Node(CALL, function=f"{tok.text}_")
        node = self._primary()
        after = self.tok
        if (after.kind == "op" and after.text != "||") or self._is("punct", "["):
            name = _OPERATOR_FUNCTIONS.get(after.text, f"_{after.text}_")
            self.i += 1
            self._skip_expression(stop_at_or)
            return Node(CALL, function=name)
        if self._is("op", "||") and not stop_at_or:
            self.i += 1
            self._skip_expression(stop_at_or)
            return Node(CALL, function="_||_")
        return node

    def _primary(self) -> Node:
        tok = self.tok
        if tok.kind in ("string", "bytes", "int", "uint", "double", "bool", "null"):
            self.i += 1
            return Node(LITERAL, literal=tok)
        if tok.kind == "punct" and tok.text in "[{":
            self._skip_group()
            return Node(LIST if tok.text == "[" else MAP)
        if self._is("punct", "("):
            # A parenthesised argument: kept as what it holds when that is one primary.
            self.i += 1
            inner = self._operand(stop_at_or=False)
            if not self._is("punct", ")"):
                raise _syntax(f"missing ')' at {_antlr(self.tok.text)}", self.tok.pos)
            self.i += 1
            return inner
        if tok.kind == "ident" or self._is("punct", "."):
            return self._chain()
        raise _syntax(f"mismatched input {_antlr(tok.text)} expecting an expression", tok.pos)

    def _chain(self) -> Node:
        """`a.b.c`, a call `f(...)` or a member call `a.b.f(...)`, and any `.x` after it."""
        names: list[str] = []
        if self._is("punct", "."):  # a leading dot: a name from the root scope
            self.i += 1
        node: Node | None = None
        while True:
            if self.tok.kind != "ident":
                raise _syntax(
                    f"no viable alternative at input {_antlr(self.tok.text)}", self.tok.pos
                )
            if not names and self.tok.text in _RESERVED:
                # A field may be named `namespace`; a root name or a function may not.
                raise SelectorError(f"CEL parse error: reserved identifier: {self.tok.text}")
            names.append(self.tok.text)
            self.i += 1
            if self._is("punct", "("):
                node = Node(CALL, function=names[-1], args=self._arguments())
                break
            if not self._is("punct", "."):
                break
            self.i += 1
        if node is None:
            return Node(IDENT if len(names) == 1 else SELECT, path=".".join(names))
        if self._is("punct", "."):  # `f(...).x`: a select whose operand is a call
            while self._is("punct", "."):
                self.i += 1
                if self.tok.kind != "ident":
                    raise _syntax(
                        f"no viable alternative at input {_antlr(self.tok.text)}", self.tok.pos
                    )
                self.i += 1
                if self._is("punct", "("):
                    self._skip_group()
            return Node(SELECT)
        return node

    def _arguments(self) -> list[Node]:
        self.i += 1  # "("
        args: list[Node] = []
        if self._is("punct", ")"):
            self.i += 1
            return args
        while True:
            args.append(self._operand(stop_at_or=False))
            if self._is("punct", ","):
                self.i += 1
                continue
            if self._is("punct", ")"):
                self.i += 1
                return args
            raise _syntax(f"mismatched input {_antlr(self.tok.text)} expecting ')'", self.tok.pos)

    def _skip_group(self) -> None:
        """Past a bracketed group starting at the current token, nesting counted."""
        stack: list[str] = []
        while True:
            tok = self.tok
            if tok.kind == "end":
                raise _syntax(f"missing {_antlr(stack[-1])} at '<EOF>'", tok.pos)
            self.i += 1
            if tok.kind == "punct" and tok.text in _CLOSERS:
                stack.append(_CLOSERS[tok.text])
            elif tok.kind == "punct" and tok.text in ")]}":
                if tok.text != stack[-1]:
                    raise _syntax(f"mismatched input {_antlr(tok.text)}", tok.pos)
                stack.pop()
                if not stack:
                    return

    def _skip_expression(self, stop_at_or: bool) -> None:
        """Past the rest of an operand whose operator already decided its error: to the `||`
        (for a top-level operand) or the `,` / `)` that ends it, nesting counted."""
        while True:
            tok = self.tok
            if tok.kind == "end" or (tok.kind == "punct" and tok.text in ")],}"):
                return
            if stop_at_or and tok.kind == "op" and tok.text == "||":
                return
            if tok.kind == "punct" and tok.text in _CLOSERS:
                self._skip_group()
            else:
                self.i += 1


def operands(expression: str) -> list[Node]:
    """The operands of the expression's top-level `||` chain, left to right; a
    `SelectorError` for what is not CEL."""
    return _Parser(_Lexer(expression).tokens()).terms()
