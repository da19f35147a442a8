"""The media types the API answers in, as one table: content negotiation and the OpenAPI
document both read it, so what is published is what is served.

Each serializer names the renderings (`as=` in Accept) it can carry; as kube-apiserver's, YAML
carries objects, lists, Tables and metadata-only answers and errors, but no watch stream.
"""

from __future__ import annotations

from dataclasses import dataclass

JSON = "application/json"
YAML = "application/yaml"
WATCH_JSON = "application/json;stream=watch"

TABLE = "Table"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
DISCOVERY = "APIGroupDiscoveryList"


@dataclass(frozen=True)
class Rendering:
    """An `as=` rendering: its API group and the versions asked for as `v=`."""

    name: str
    group: str
    versions: frozenset[str]


RENDERINGS = {
    TABLE: Rendering(TABLE, "meta.k8s.io", frozenset({"v1", "v1beta1"})),
    PARTIAL: Rendering(PARTIAL, "meta.k8s.io", frozenset({"v1", "v1beta1"})),
    PARTIAL_LIST: Rendering(PARTIAL_LIST, "meta.k8s.io", frozenset({"v1", "v1beta1"})),
    DISCOVERY: Rendering(DISCOVERY, "apidiscovery.k8s.io", frozenset({"v2"})),
}


@dataclass(frozen=True)
class Serializer:
    media_type: str
    renderings: frozenset[str]
    streams: bool


SERIALIZERS = (
    Serializer(JSON, frozenset(RENDERINGS), streams=True),
    Serializer(YAML, frozenset({TABLE, PARTIAL, PARTIAL_LIST}), streams=False),
)


def answer_types(*, watch: bool = False) -> tuple[str, ...]:
    """The media types an object or list answer comes in (the OpenAPI's `content`), with the
    watch stream's for an operation that can watch."""
    plain = tuple(s.media_type for s in SERIALIZERS)
    return (*plain, WATCH_JSON) if watch else plain
