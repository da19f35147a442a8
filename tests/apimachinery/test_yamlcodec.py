"""YAML decoding: libyaml when built in, the same values as PyYAML's safe loader, its messages."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.apimachinery import bounds, yamlcodec

DATA = Path(__file__).resolve().parents[2] / "runtimes" / "data"

BROKEN = [
    "spec:\n  task: [unclosed\n",
    "a: b: c\n",
    "a:\n\t- x\n",
    "{a: 1",
    'key: "unterminated\n',
    "- a\nb: 1\n",
    "a: *nope\n",
    "a: !!python/object/apply:os.system [echo]\n",
    "\x00",
    "a: \ud800",
]


def _pure_python_error(text: str) -> yaml.YAMLError:
    with pytest.raises(yaml.YAMLError) as caught:
        yaml.load(text, Loader=yaml.SafeLoader)
    return caught.value


def test_it_uses_libyaml_when_pyyaml_has_it() -> None:
    assert yaml.__with_libyaml__
    assert yamlcodec.LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("path", sorted(DATA.glob("*.yaml")), ids=lambda p: p.name)
def test_it_reads_the_shipped_data_as_the_pure_python_loader_does(path: Path) -> None:
    text = path.read_text()
    assert yamlcodec.load_all(text) == list(yaml.safe_load_all(text))


def test_it_constructs_the_safe_types() -> None:
    text = "a: 1\nb: 1.5\nc: true\nd: null\ne: 2024-01-02\nf: [x, {g: ~}]\nh: !!binary aGk=\n"
    assert yamlcodec.load(text) == yaml.safe_load(text)
    assert yamlcodec.load(text.encode()) == yaml.safe_load(text)


def test_it_reads_nothing_as_none() -> None:
    assert yamlcodec.load("") is None
    assert yamlcodec.load(b"") is None
    assert yamlcodec.load_all("---\n---\na: 1\n") == [None, {"a": 1}]


@pytest.mark.parametrize("text", BROKEN)
def test_it_reports_errors_in_pyyaml_words(text: str) -> None:
    expected = _pure_python_error(text)
    with pytest.raises(yaml.YAMLError) as caught:
        yamlcodec.load(text)
    assert type(caught.value) is type(expected)
    assert str(caught.value) == str(expected)


def test_it_keeps_pyyaml_error_lines_for_the_editor() -> None:
    # libyaml puts this one a line lower than PyYAML, whose line the editor shows.
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        yamlcodec.load_all("{a: 1")
    assert caught.value.problem_mark is not None
    assert caught.value.problem_mark.line == 0


def test_it_refuses_deep_nesting_with_a_yaml_error() -> None:
    with pytest.raises(yaml.YAMLError, match="exceeded maximum nesting depth"):
        yamlcodec.load("[" * 5000 + "]" * 5000)


def test_it_reads_nesting_the_pure_python_loader_cannot() -> None:
    value: Any = yamlcodec.load("[" * 500 + "]" * 500)
    depth = 0
    while value:
        value, depth = value[0], depth + 1
    assert depth == 499


def test_it_composes_nodes_with_their_lines() -> None:
    node = yamlcodec.compose("a:\n  b: [1, 2]\n")
    assert isinstance(node, yaml.MappingNode)
    key, value = node.value[0]
    assert (key.value, key.start_mark.line) == ("a", 0)
    assert isinstance(value, yaml.MappingNode)
    assert value.value[0][0].start_mark.line == 1


# Request bodies: load_body, bounded before anything is built.


def _billion_laughs(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_body_refuses_anchors_and_aliases_before_expanding_them() -> None:
    with pytest.raises(bounds.BoundExceeded, match="anchor &a0"):
        yamlcodec.load_body(_billion_laughs())
    with pytest.raises(bounds.BoundExceeded, match="alias \\*x"):
        # An alias without its anchor is still refused as an alias, not reported as missing.
        yamlcodec.load_body("a: *x\n")
    with pytest.raises(bounds.BoundExceeded, match="anchor &m"):
        yamlcodec.load_body("base: &m {a: 1}\nother:\n  <<: *m\n")


@pytest.mark.parametrize("levels", [101, 999, 1001, 10_000])
def test_body_refuses_more_than_100_levels(levels: int) -> None:
    started = time.perf_counter()
    with pytest.raises(bounds.BoundExceeded, match="nested more than 100 levels"):
        yamlcodec.load_body("[" * levels + "]" * levels)
    # libyaml's own limit (1,000) is answered as ours, not parsed again by PyYAML (seconds).
    assert time.perf_counter() - started < 0.5
    block = "".join("  " * i + f"k{i}:\n" for i in range(levels)) + "  " * levels + "x\n"
    with pytest.raises(bounds.BoundExceeded, match="nested more than 100 levels"):
        yamlcodec.load_body(block)


def test_body_reads_100_levels() -> None:
    value, _ = yamlcodec.load_body("[" * 100 + "]" * 100)
    assert bounds.depth_of(value) == 100


def test_body_refuses_too_many_nodes() -> None:
    text = "[" + ",".join(["0"] * bounds.MAX_NODES) + "]"
    with pytest.raises(bounds.BoundExceeded) as caught:
        yamlcodec.load_body(text)
    assert caught.value.reason == "RequestEntityTooLarge"


def test_body_holds_only_json_values() -> None:
    value, _ = yamlcodec.load_body(
        "when: 2024-01-02\n1: one\ntrue: yes\nbig: 123456789012345678901234567890\n"
        "1.5: float\n1e3: whole\nn: key\n"
    )
    assert value == {
        "when": "2024-01-02",
        "1": "one",
        "true": True,
        "big": 1.2345678901234568e29,
        "1.5": "float",
        "1000": "whole",  # a float key is written as Go writes it
        "false": "key",  # n is false to go-yaml, as a key too
    }


def test_body_resolves_scalars_as_go_yaml_does() -> None:
    value, _ = yamlcodec.load_body(
        "a: 1e3\nb: 0962e2\nc: y\nd: n\ne: 12:30\nf: 'y'\ng: !!float 1\nh: 1.5\ni: 017\n"
        "j: 0o17\nk: 1_000\nl: !!int '12'\nm: !!str 12\nbig: 1.0e+999\no: on\n"
    )
    assert value == {
        "a": 1000,  # a whole float is written as an integer (Go's JSON encoder)
        "b": 96200,
        "c": True,
        "d": False,
        "e": "12:30",
        "f": "y",
        "g": 1,
        "h": 1.5,
        "i": 15,
        "j": 15,
        "k": 1000,
        "l": 12,
        "m": "12",
        "big": "1.0e+999",  # out of range for a double: go-yaml keeps the text
        "o": True,
    }
    assert isinstance(value["a"], int)


@pytest.mark.parametrize(
    "text",
    [
        "a: .nan\n",
        "a: -.inf\n",
        "~: a null key\n",
        "a: !!int abc\n",
        "a: !!bool maybe\n",
        "a: !!binary aGk=\n",
        "a: !!set {x}\n",
        "a: !!omap [{x: 1}]\n",
        "? [a]\n: 1\n",
        "a: !!python/object/apply:os.system [echo]\n",
        "a: [unclosed\n",
    ],
)
def test_body_refuses_what_json_cannot_hold_as_a_yaml_error(text: str) -> None:
    with pytest.raises(yaml.YAMLError):
        yamlcodec.load_body(text)


def test_body_reports_repeated_keys_in_go_yaml_words() -> None:
    value, repeated = yamlcodec.load_body(
        "a: 1\na: 2\nb: {c: 1, c: 2, d: {a: 3}}\ny: 1\ntrue: 2\ne:\n  f: 1\ne:\n  f: 2\n"
    )
    assert value == {"a": 2, "b": {"c": 2, "d": {"a": 3}}, "true": 2, "e": {"f": 2}}
    assert repeated == [
        'line 2: key "a" already set in map',
        'line 3: key "c" already set in map',
        "line 5: key true already set in map",  # y and true are one key to go-yaml
        'line 9: key "e" already set in map',  # the line of the repeated key's value
    ]
    # The same key in two mappings is no repetition; a quoted "true" is not the boolean.
    assert yamlcodec.load_body("a: {x: 1}\nb: {x: 1}\n")[1] == []
    assert yamlcodec.load_body("true: 1\n'true': 2\n")[1] == []


def test_body_keeps_pyyaml_messages_for_small_bodies_only() -> None:
    small = "a: [unclosed\n"
    with pytest.raises(yaml.YAMLError) as caught:
        yamlcodec.load_body(small)
    assert str(caught.value) == str(_pure_python_error(small))
    large = "a: [" + "x, " * (yamlcodec.PURE_FALLBACK_MAX_BYTES // 3) + "\n"
    with pytest.raises(yaml.YAMLError) as caught:
        yamlcodec.load_body(large)
    assert "did not find expected" in str(caught.value)  # libyaml's words, not a slow re-parse


def test_body_all_takes_several_documents_within_one_budget() -> None:
    assert yamlcodec.load_body_all("---\na: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
    with pytest.raises(bounds.BoundExceeded):
        yamlcodec.load_body_all("---\na: &x 1\n---\nb: 2\n")


def test_a_key_past_float32s_range_is_named_as_go_names_it_not_a_crash() -> None:
    # A fuzzed body once answered 500 here: sigs.k8s.io/yaml writes a float key through float32.
    body, _repeated = yamlcodec.load_body("a:\n  1e100: x\n  -1e39: z\n")
    assert body == {"a": {"+Inf": "x", "-Inf": "z"}}
