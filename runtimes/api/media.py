"""Media types: parsers for every body the API accepts, the JSON renderer, and Accept handling.

Bodies decode within `apimachinery.bounds` (depth, nodes, no YAML anchors) before an object is
built: JSON through `apimachinery.jsoncodec`, YAML through `apimachinery.yamlcodec.load_body`.

kube-apiserver decides by Accept whether to answer plain JSON, a meta.k8s.io Table or an
aggregated-discovery document; DRF's negotiation knows none of these, so the views ask
`accepted_as()` and the negotiation class only refuses what we can never produce.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson
from rest_framework import exceptions, negotiation, parsers, renderers
from rest_framework.request import Request

from runtimes.apimachinery import bounds, jsoncodec, mediatypes, yamlcodec

JSON = mediatypes.JSON
YAML = mediatypes.YAML
TABLE = mediatypes.TABLE
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def duplicate_fields(raw: bytes) -> list[str]:
    """Paths of the keys that an object in `raw` repeats (``spec.task``, ``[0].op``), in the
    order kube's strict JSON decoder meets them: JSON allows repeats, strict decoding does
    not. Bodies without repeats (nearly all) are read once, cheaply; only a body with some is
    read again to name their paths."""
    repeats = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeats
        decoded = dict(items)
        repeats = repeats or len(decoded) < len(items)
        return decoded

    json.loads(raw, object_pairs_hook=pairs)
    if not repeats:
        return []
    # Each object's repeats, relative to it, by the object's id; a parent takes its children's
    # (linear: a list is walked only by the object nearest above it).
    found: dict[int, list[str]] = {}

    def below(value: Any) -> list[str]:
        if isinstance(value, dict):
            return found.pop(id(value), [])
        if isinstance(value, list):
            return [
                _joined(f"[{index}]", sub)
                for index, item in enumerate(value)
                for sub in below(item)
            ]
        return []

    def paths(items: list[tuple[str, Any]]) -> dict[str, Any]:
        decoded: dict[str, Any] = {}
        relative: list[str] = []
        for key, value in items:
            if key in decoded:
                relative.append(key)
            decoded[key] = value
            relative.extend(
                key + ("" if sub.startswith("[") else ".") + sub for sub in below(value)
            )
        if relative:
            found[id(decoded)] = relative
        return decoded

    return list(dict.fromkeys(below(json.loads(raw, object_pairs_hook=paths))))


def _joined(head: str, path: str) -> str:
    return head + path if path.startswith("[") else f"{head}.{path}"


def _decode_json(stream: Any, parser_context: Any = None) -> Any:
    raw = stream.read()
    try:
        value = jsoncodec.loads(raw)
    except jsoncodec.JSONError as exc:
        raise exceptions.ParseError(f"invalid JSON: {exc}") from exc
    except bounds.BoundExceeded as exc:
        raise exc.api_error() from None
    view = (parser_context or {}).get("view")
    if view is not None:
        view.repeated = [f'duplicate field "{path}"' for path in duplicate_fields(raw)]
    return value


def _decode_yaml(stream: Any, parser_context: Any = None) -> Any:
    try:
        value, repeated = yamlcodec.load_body(stream.read())
    except yamlcodec.YAMLError as exc:
        raise exceptions.ParseError(f"invalid YAML: {exc}") from exc
    except bounds.BoundExceeded as exc:
        raise exc.api_error() from None
    view = (parser_context or {}).get("view")
    if view is not None:
        # go-yaml's words for repeated keys: one error naming each by line.
        view.repeated = ["yaml: unmarshal errors:\n  " + "\n  ".join(repeated)] if repeated else []
    return value


class KubeJSONParser(parsers.BaseParser):
    media_type = JSON

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        return _decode_json(stream, parser_context)


class YAMLParser(parsers.BaseParser):
    media_type = YAML

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        return _decode_yaml(stream, parser_context)


class MergePatchParser(KubeJSONParser):
    media_type = MERGE_PATCH


class JSONPatchParser(KubeJSONParser):
    media_type = JSON_PATCH


class ApplyPatchParser(YAMLParser):
    media_type = APPLY_PATCH


class KubeJSONRenderer(renderers.BaseRenderer):
    media_type = JSON
    format = "json"
    charset = None

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        request = (renderer_context or {}).get("request")
        if request is not None and wants_pretty(request):
            return orjson.dumps(read_back(data), option=orjson.OPT_INDENT_2)
        return orjson.dumps(data)


def read_back(data: Any) -> Any:
    """`data` as plain values: stored text embedded as orjson.Fragment is parsed, so a writer
    other than compact JSON (indented, YAML) can lay it all out."""
    return orjson.loads(orjson.dumps(data))


_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla/5.0")


def wants_pretty(request: Any) -> bool:
    """kube-apiserver's rule: `?pretty=` parsed as a Go bool when given, else indented for
    curl, Wget and browsers (by User-Agent)."""
    value = request.GET.get("pretty", "")
    if value:
        return value in _TRUE
    return str(request.META.get("HTTP_USER_AGENT", "")).startswith(_PRETTY_AGENTS)


@dataclass(frozen=True)
class MediaRange:
    type: str
    params: dict[str, str]


def parse_accept(header: str) -> list[MediaRange]:
    ranges = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";") if p.strip()]
        if not pieces:
            continue
        params = {}
        for piece in pieces[1:]:
            key, _, value = piece.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        ranges.append(MediaRange(pieces[0].lower(), params))
    return ranges


def _serializer(media_type: str) -> mediatypes.Serializer | None:
    """The serializer a media range asks for (wildcards and the watch stream mean JSON)."""
    if media_type in {JSON, "application/*", "*/*", mediatypes.WATCH_JSON}:
        return mediatypes.SERIALIZERS[0]
    return next((s for s in mediatypes.SERIALIZERS if s.media_type == media_type), None)


def negotiate(
    request: Request | Any, allowed: tuple[str, ...] = (TABLE,)
) -> tuple[str, str, str] | None:
    """The first Accept range that can be served: (media type, rendering, version), with
    ("", "") for a plain object or list; None when nothing can (the caller answers 406)."""
    header = request.META.get("HTTP_ACCEPT", "") or "*/*"
    for media in parse_accept(header):
        serializer = _serializer(media.type)
        if serializer is None:
            continue
        as_ = media.params.get("as")
        if as_ is None:
            return (serializer.media_type, "", "")
        rendering = mediatypes.RENDERINGS.get(as_)
        if (
            rendering is not None
            and as_ in allowed
            and as_ in serializer.renderings
            and media.params.get("g") == rendering.group
            and media.params.get("v") in rendering.versions
        ):
            return (serializer.media_type, as_, media.params["v"])
    return None


def accepted_as(
    request: Request | Any, allowed: tuple[str, ...] = (TABLE,)
) -> tuple[str, str] | None:
    """The first acceptable rendering: ("", "") for plain JSON or YAML, ("Table", "v1") for a
    Table, ...; None when nothing in Accept can be served (the caller answers 406)."""
    chosen = negotiate(request, allowed)
    return None if chosen is None else (chosen[1], chosen[2])


# Metadata only (kube's metadata client and informers, the garbage collector's reads).
PARTIAL, PARTIAL_LIST = mediatypes.PARTIAL, mediatypes.PARTIAL_LIST
METADATA_RENDERINGS = (PARTIAL, PARTIAL_LIST)


def wrong_partial(requested: str) -> exceptions.NotAcceptable:
    """kube's 406 for a metadata rendering that does not fit the answer: a list asked for as
    one object, or one object (a GET, a watch event) as a list."""
    if requested == PARTIAL:
        return exceptions.NotAcceptable(
            "you requested PartialObjectMetadata, but the requested object is a list "
            "(*unstructured.UnstructuredList)"
        )
    return exceptions.NotAcceptable(
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        "(*unstructured.Unstructured)"
    )


ALL_RENDERINGS = tuple(mediatypes.RENDERINGS)


def wants_yaml(request: Request | Any, allowed: tuple[str, ...] = ALL_RENDERINGS) -> bool:
    """Whether the first media type in Accept that can be served is YAML."""
    chosen = negotiate(request, allowed)
    return chosen is not None and chosen[0] == YAML


def not_acceptable() -> exceptions.NotAcceptable:
    return exceptions.NotAcceptable(
        "only the following media types are accepted: application/json, "
        "application/json;as=Table;v=v1;g=meta.k8s.io, application/yaml"
    )


class KubeYAMLRenderer(renderers.BaseRenderer):
    """`Accept: application/yaml`, as kube-apiserver writes objects and lists in YAML."""

    media_type = YAML
    format = "yaml"
    charset = None

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        return yamlcodec.dump(read_back(data)).encode()


class KubeNegotiation(negotiation.BaseContentNegotiation):
    """JSON, or YAML when Accept puts it first; the views decide between plain objects and
    Tables via Accept."""

    def select_parser(self, request: Request, parsers: list[Any]) -> Any:
        return negotiation.DefaultContentNegotiation().select_parser(request, parsers)

    def select_renderer(
        self, request: Request, renderers: list[Any], format_suffix: Any = None
    ) -> Any:
        view = (getattr(request, "parser_context", None) or {}).get("view")
        allowed = tuple(getattr(view, "renderings", ALL_RENDERINGS))
        if wants_yaml(request, allowed):
            return (KubeYAMLRenderer(), YAML)
        return (KubeJSONRenderer(), JSON)
