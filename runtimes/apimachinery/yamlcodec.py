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

from collections.abc import Callable, Iterator
from typing import Any

import yaml

from runtimes.apimachinery import bounds, goyaml

# Request bodies (and the console's editor) use `load_body`, which is bounded before anything is
# built: the parser's events are read first, and the body is refused (`bounds.BoundExceeded`, a
# 400 or 413 Status) at the first anchor or alias, past `bounds.MAX_DEPTH` levels or past
# `bounds.MAX_NODES` nodes. So a "billion laughs" costs the few events before its first anchor,
# never an expansion. Anchors are refused rather than expanded within a budget because no client
# needs them (kubectl and client libraries send JSON, or YAML without them) and an expansion
# budget would still let one body build a budget's worth of copies. The files we ship use none;
# they are read with `load`/`load_all`, unbounded, as trusted input.
#
# `load_body` reads scalars as kube-apiserver's decoder does (sigs.k8s.io/yaml over go-yaml v2,
# `goyaml`): ``y`` and ``n`` are booleans, ``1e3`` a number, ``12:30`` a string. It builds only
# what JSON can hold, as that YAML-to-JSON conversion does: timestamps stay the text they were
# written as, mapping keys become strings as Go writes them (``1: x`` is key "1", ``y: x`` key
# "true"; a null key is refused), a whole float is an integer (Go's JSON encoder writes 1e3 as
# 1000), integers beyond 64 bits become floats (as orjson reads them in JSON), and NaN,
# infinities, ``!!binary``, ``!!set``, ``!!omap`` and ``!!pairs`` are refused as YAML errors (400).
# It returns go-yaml's words for each key a mapping repeats, for ``fieldValidation`` to judge as
# it does JSON's. The shipped files (`load`, `load_all`) keep PyYAML's YAML 1.1 reading.

YAMLError = yaml.YAMLError

Loader = type[yaml.SafeLoader] | type[yaml.CSafeLoader]
LOADER: Loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
_Dumper: type[yaml.SafeDumper] | type[yaml.CSafeDumper] = (
    yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper
)
# A body libyaml refuses is parsed again by PyYAML for its message only up to this size: PyYAML
# takes about ten times libyaml's time, and a 3 MiB body would hold a worker for seconds.
PURE_FALLBACK_MAX_BYTES = 64 * 1024


def dump(data: Any) -> str:
    """YAML as kubectl and kube-apiserver write it: keys in their order, block style."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 16)


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


def _decode[T](run: Callable[[Loader], T], text: str | bytes | None = None) -> T:
    """``run`` with libyaml, then with PyYAML for its error message; a ``text`` given is only
    parsed again when it is at most `PURE_FALLBACK_MAX_BYTES` (PyYAML is ten times slower)."""
    try:
        return run(LOADER)
    # libyaml encodes str input to UTF-8 first, so a lone surrogate fails there, not as YAML.
    except (yaml.YAMLError, UnicodeEncodeError) as fast_error:
        if LOADER is yaml.SafeLoader:
            raise
        if text is not None and len(text) > PURE_FALLBACK_MAX_BYTES:
            if isinstance(fast_error, UnicodeEncodeError):
                raise yaml.YAMLError(f"the text is not valid Unicode: {fast_error}") from None
            raise
        try:
            return run(yaml.SafeLoader)
        except RecursionError:
            # libyaml stops at 1000 levels of nesting with a YAML error; PyYAML would crash.
            raise fast_error from None


def load_body(text: str | bytes, what: str = "the body") -> tuple[Any, list[str]]:
    """A request body's one document, within `bounds`, as JSON types; and its repeated keys."""
    return _decode(lambda loader: _bounded(text, loader, what, _single), text)


def load_body_all(text: str | bytes, what: str = "the manifest") -> list[Any]:
    """Every document in ``text``, within `bounds` taken over all of them, as JSON types."""
    return _decode(lambda loader: _bounded(text, loader, what, _every), text)[0]


def _single(loader: yaml.BaseLoader) -> Any:
    return loader.get_single_data()


def _every(loader: yaml.BaseLoader) -> list[Any]:
    found = []
    while loader.check_data():
        found.append(loader.get_data())
    return found


def _bounded[T](
    text: str | bytes, loader: Loader, what: str, build: Callable[[Any], T]
) -> tuple[T, list[str]]:
    try:
        repeated = scan(yaml.parse(text, Loader=loader), what)
    except yaml.MarkedYAMLError as error:
        # libyaml's scanner looks ahead and stops at 1,000 levels before our count reaches 100;
        # the answer is ours, and asking PyYAML for its words would only take a second longer.
        if "maximum nesting depth" in str(error.problem):
            raise bounds.too_deep(what) from None
        raise
    body_loader = _JSON_LOADERS[loader](text)
    try:
        return build(body_loader), repeated
    finally:
        body_loader.dispose()


def scan(events: Iterator[yaml.Event], what: str = "the body") -> list[str]:
    """Reads a parse's events, refusing anchors, aliases, depth and size past `bounds`; returns
    go-yaml's words for each key a mapping repeats (``line 3: key "a" already set in map``,
    keys compared as go-yaml reads them, the line being the value's). Iterative, so any
    nesting costs no stack."""
    repeated: list[str] = []
    nodes = 0
    # One entry per open collection: None for a sequence; for a mapping, its keys so far and
    # [whether the next node is a key, the repeated key awaiting its value's line].
    open_: list[tuple[set[Any], list[Any]] | None] = []
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            raise _anchors(what, f"the alias *{event.anchor}")
        if isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
            if event.anchor is not None:
                raise _anchors(what, f"the anchor &{event.anchor}")
            nodes += 1
            if nodes > bounds.MAX_NODES:
                raise bounds.too_many_nodes(what)
            parent = open_[-1] if open_ else None
            if parent is not None and not parent[1][0] and parent[1][1] is not None:
                line = event.start_mark.line + 1 if event.start_mark else 0
                repeated.append(f"line {line}: key {parent[1][1]} already set in map")
                parent[1][1] = None
            if isinstance(event, yaml.ScalarEvent):
                if parent is not None and parent[1][0]:
                    key = _key_identity(event)
                    if key in parent[0]:
                        parent[1][1] = goyaml.go_value(key[1])
                    parent[0].add(key)
                _done(parent)
            else:
                if len(open_) >= bounds.MAX_DEPTH:
                    raise bounds.too_deep(what)
                mapping = isinstance(event, yaml.MappingStartEvent)
                open_.append((set(), [True, None]) if mapping else None)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_.pop()
            _done(open_[-1] if open_ else None)
    return repeated


def _key_identity(event: yaml.ScalarEvent) -> tuple[str, Any]:
    """A key as go-yaml compares keys: by its resolved tag and value (``y`` is ``true``)."""
    if event.implicit[0] and event.tag in (None, "!"):
        tag, value = goyaml.resolve(event.value)
    else:
        tag, value = goyaml.STR, event.value
    if isinstance(value, float) and value != value:
        return tag, event.value  # NaN equals nothing, not even itself
    return tag, value


def _done(parent: tuple[set[Any], list[Any]] | None) -> None:
    # A node inside a mapping ended: keys and values alternate.
    if parent is not None:
        parent[1][0] = not parent[1][0]


def _anchors(what: str, found: str) -> bounds.BoundExceeded:
    return bounds.BoundExceeded(
        f"{what} uses YAML anchors and aliases ({found}), which this API does not accept",
        "Write each value out in full (kubectl and the client libraries send JSON), or send "
        "the body as JSON.",
    )


class _JSONConstructor(yaml.constructor.SafeConstructor):
    """SafeConstructor limited to the values JSON can hold (see the module docstring)."""

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> str:  # type: ignore[override]
        return str(self.construct_scalar(node))

    def construct_go_scalar(self, node: yaml.ScalarNode) -> Any:
        """A null, boolean or number as go-yaml reads it (`goyaml`), then as JSON holds it:
        a whole float is written as an integer (``1e3`` is 1000), as Go's JSON encoder does."""
        text = str(self.construct_scalar(node))
        try:
            _tag, value = goyaml.resolve(text, node.tag.removeprefix(_LONG_TAG))
        except goyaml.ResolveError as error:
            raise _not_json(node, str(error)) from None
        if not isinstance(value, float):
            return value
        if value != value or value in (float("inf"), float("-inf")):
            raise _not_json(node, "NaN and infinities are not JSON numbers")
        if value.is_integer() and abs(value) < 1e21 and -(2**63) <= value < 2**63:
            return int(value)
        return value

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # PyYAML's own loop, with each key made a string as it is read: in a dict built first,
        # `1: x` and `true: y` would already be one key (1 == True).
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, dict | list):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found a key that is not a scalar",
                    key_node.start_mark,
                )
            mapping[_key_text(key, key_node)] = self.construct_object(value_node, deep=deep)
        return mapping

    def refuse(self, node: yaml.Node) -> Any:
        raise _not_json(node, f"{node.tag} values have no JSON form")


def _key_text(key: Any, node: yaml.Node) -> str:
    """A key as sigs.k8s.io/yaml writes it in JSON; a null key has no JSON form there."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        raise _not_json(node, "a null mapping key has no JSON form")
    return goyaml.format_g(key, 32) if isinstance(key, float) else str(key)


def _not_json(node: yaml.Node, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


_LONG_TAG = "tag:yaml.org,2002:"

for _tag, _construct in (
    ("tag:yaml.org,2002:timestamp", _JSONConstructor.construct_yaml_timestamp),
    ("tag:yaml.org,2002:int", _JSONConstructor.construct_go_scalar),
    ("tag:yaml.org,2002:float", _JSONConstructor.construct_go_scalar),
    ("tag:yaml.org,2002:bool", _JSONConstructor.construct_go_scalar),
    ("tag:yaml.org,2002:null", _JSONConstructor.construct_go_scalar),
    ("tag:yaml.org,2002:merge", _JSONConstructor.construct_yaml_str),
    ("tag:yaml.org,2002:binary", _JSONConstructor.refuse),
    ("tag:yaml.org,2002:set", _JSONConstructor.refuse),
    ("tag:yaml.org,2002:omap", _JSONConstructor.refuse),
    ("tag:yaml.org,2002:pairs", _JSONConstructor.refuse),
):
    _JSONConstructor.add_constructor(_tag, _construct)  # type: ignore[type-var]


class _GoResolver:
    """Plain scalars take the tag go-yaml v2 gives them (`goyaml.resolve`), not YAML 1.1's."""

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _LONG_TAG + goyaml.resolve(value)[0]
        return super().resolve(kind, value, implicit)  # type: ignore[misc, no-any-return]


class _JSONLoader(_GoResolver, _JSONConstructor, yaml.SafeLoader):
    pass


_JSON_LOADERS: dict[Loader, Callable[[str | bytes], Any]] = {yaml.SafeLoader: _JSONLoader}
if yaml.__with_libyaml__:

    class _CJSONLoader(_GoResolver, _JSONConstructor, yaml.CSafeLoader):
        pass

    _JSON_LOADERS[yaml.CSafeLoader] = _CJSONLoader
