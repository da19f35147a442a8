"""YAML decoding: libyaml when built in, the same values as PyYAML's safe loader, its messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.apimachinery import yamlcodec

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
