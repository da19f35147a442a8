"""The abuse benchmark's inputs: each hostile body beside a benign one of the same kind.

Every builder is pure and small: what it makes is the input of one row of the threat table.
"""

from __future__ import annotations

import copy
from typing import Any

IMAGE = "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32
API_VERSION = "nodus.dev/v1beta1"

# Backtracking engines take 2^n steps on `^(a+)+$` against n a's and a character that fails.
REDOS_PATTERN = "^(a+)+$"
BENIGN_PATTERN = "^a+$"
REDOS_INPUT = "a" * 28 + "!"


def runtime(name: str, spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "TrainingRuntime",
        "metadata": {"name": name, **metadata},
        "spec": {"image": IMAGE, "task": "SFT", "command": ["python", "-m", "trainer"]},
    }
    body["spec"].update(copy.deepcopy(spec or {}))
    return body


def pattern_runtime(name: str, pattern: str) -> dict[str, Any]:
    """A runtime whose one parameter, `name`, must match `pattern`."""
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": pattern}}}
    return runtime(name, {"parameters": schema})


def ref_runtime(name: str, cyclic: bool) -> dict[str, Any]:
    """A parameter `depth` behind `$ref`s: a cycle (a -> b -> a) or a chain that ends."""
    defs: dict[str, Any] = (
        {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
        if cyclic
        else {"a": {"$ref": "#/$defs/b"}, "b": {"type": "integer", "minimum": 0}}
    )
    schema = {"type": "object", "$defs": defs, "properties": {"depth": {"$ref": "#/$defs/a"}}}
    return runtime(name, {"parameters": schema})


def compile_draft(parameters: dict[str, Any]) -> dict[str, Any]:
    """A TrainingJob draft as `POST .../trainingruntimes/NAME/compile` takes it."""
    return {"model": "meta-llama/Llama-3.1-8B", "parameters": parameters}


def billion_laughs(name: str, levels: int = 9, width: int = 9) -> str:
    """A runtime in under 1 KB of YAML whose aliases expand to width**levels strings (9**9:
    387 million), all inside its free-form parameters schema, where only a size check stops
    them."""
    lines = [
        f"apiVersion: {API_VERSION}",
        "kind: TrainingRuntime",
        f"metadata: {{name: {name}}}",
        f"spec:\n  image: '{IMAGE}'\n  task: SFT\n  parameters:\n    x-lol:",
        "      a0: &a0 [" + ",".join(['"lol"'] * width) + "]",
    ]
    for level in range(1, levels):
        lines.append(f"      a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def plain_apply(name: str) -> str:
    """The benign apply: a whole runtime in YAML, about the bomb's size."""
    return (
        f"apiVersion: {API_VERSION}\nkind: TrainingRuntime\nmetadata:\n  name: {name}\n"
        f"  labels: {{app: trainer}}\nspec:\n  image: {IMAGE}\n  task: SFT\n"
        "  command: [python, -m, trainer]\n"
    )


def deep_yaml(name: str, depth: int) -> str:
    """A runtime whose parameters schema holds a flow sequence nested `depth` deep."""
    return plain_apply(name) + "  parameters: {x: " + "[" * depth + "]" * depth + "}\n"


def labels(count: int) -> dict[str, str]:
    return {f"k{i:05d}": "v" for i in range(count)}


def selector(size: int) -> str:
    """A label selector of about `size` bytes: many `key=value` terms, all valid."""
    terms: list[str] = []
    total = 0
    i = 0
    while total < size:
        term = f"k{i:05d}=v"
        terms.append(term)
        total += len(term) + 1
        i += 1
    return ",".join(terms)


def field_selector(size: int) -> str:
    """A field selector of about `size` bytes: `spec.task!=X` terms."""
    terms: list[str] = []
    total = 0
    i = 0
    while total < size:
        term = f"spec.task!=t{i:05d}"
        terms.append(term)
        total += len(term) + 1
        i += 1
    return ",".join(terms)
