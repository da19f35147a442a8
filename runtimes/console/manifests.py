"""YAML manifests in the publish editor: parse with line numbers, locate fields, diff.

The editor is a textarea; this module turns its text into an object, finds the line each
Status cause's field sits on (so the cause can be shown beside it), and renders the editable
form of a stored object (without status and server-owned metadata) and a diff against it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import yaml

from runtimes.apimachinery import bounds, yamlcodec
from runtimes.apimachinery.meta import API_VERSION, SERVER_SET_METADATA, Obj
from runtimes.registry.trainingruntime.schema import path_segments


@dataclass(frozen=True)
class ParseError:
    message: str
    line: int | None


def parse(text: str) -> Obj | ParseError:
    """The one document in the editor, decoded as the API decodes a YAML body (within the
    body bounds: no anchors or aliases, at most 100 levels deep)."""
    try:
        documents = [d for d in yamlcodec.load_body_all(text) if d is not None]
    except yamlcodec.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        return ParseError(f"not valid YAML: {problem}", mark.line + 1 if mark else None)
    except bounds.BoundExceeded as exc:
        return ParseError(f"{exc.message}. {exc.fix}", None)
    if len(documents) != 1:
        return ParseError("the editor takes exactly one TrainingRuntime document", None)
    if not isinstance(documents[0], dict):
        return ParseError("the document must be a mapping (an object)", 1)
    return documents[0]


def line_of(text: str, field: str) -> int | None:
    """The 1-based line of the deepest node along `field` (``spec.presets[0].model``)."""
    try:
        node = yamlcodec.compose(text)
    except yamlcodec.YAMLError:
        return None
    if node is None:
        return None
    line = None
    for segment in path_segments(field):
        key = segment[1:-1] if segment.startswith("[") else segment
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if k.value == key), None)
            if found is None:
                return line
            key_node = next(k for k, v in node.value if k.value == key)
            line = key_node.start_mark.line + 1
            node = found
        elif (
            isinstance(node, yaml.SequenceNode)
            and key.isdecimal()
            and len(key) <= 9
            and int(key) < len(node.value)
        ):
            node = node.value[int(key)]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def editable(obj: Obj) -> Obj:
    """The object as a person edits it: no status, no server-owned metadata."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_SET_METADATA}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": meta,
        "spec": obj.get("spec") or {},
    }


def dump(obj: Obj) -> str:
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=100)


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "del", "ctx", "hunk"
    text: str


def diff(old: Obj, new: Obj) -> list[DiffLine]:
    """A unified diff of the editable forms (both normalised through YAML)."""
    before = dump(editable(old)).splitlines()
    after = dump(editable(new)).splitlines()
    lines = []
    for line in difflib.unified_diff(before, after, "stored", "yours", lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        lines.append(DiffLine(kind, line))
    return lines


STARTER = """apiVersion: {api_version}
kind: TrainingRuntime
metadata:
  name: my-runtime
spec:
  image: registry.example.com/trainers/sft:1.0@sha256:{digest}
  task: SFT
  launcher: Accelerate
  command: [python, -m, trainer]
  requires: {{data: true}}
  parameters:
    type: object
    properties:
      learningRate: {{type: number, exclusiveMinimum: 0, maximum: 1, default: 0.0002}}
      epochs: {{type: integer, minimum: 1, default: 1}}
  defaults:
    resources:
      gpu: {{type: [L40S, A100], count: 1}}
""".format(api_version=API_VERSION, digest="0" * 64)
