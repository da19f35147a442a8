"""ListOptions for list and watch: parsing, kube's validation rules (400 / 422) and selectors.

Mirrors apimachinery's ``internalversion.ListOptions`` validation: what a list forbids
(sendInitialEvents, resourceVersionMatch without resourceVersion) and what a watch requires
(sendInitialEvents only with resourceVersionMatch=NotOlderThan). Garbage that cannot be parsed
at all (a non-integer limit or resourceVersion, a bad selector) is a 400 BadRequest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtimes.apimachinery import errors
from runtimes.apimachinery.fielderrors import FieldError, forbidden, not_supported
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_values,
    parse_field_selector,
    parse_label_selector,
)
from runtimes.apimachinery.selectors.labels import Operator
from runtimes.apimachinery.selectors.shards import (
    UID,
    ShardSelector,
    field_hash,
    parse_shard_selector,
)
from runtimes.registry.resources import ResourceType
from runtimes.watch.cache import Lookup

# A selector may be at most 8 KiB (``MAX_SELECTOR_BYTES``; ours: kube bounds selectors only by the
# request line, which Go's server caps at 1 MiB with the headers). That holds about 120 label
# values of the full 63 characters in one ``in (...)`` set, bounds the parse and the per-object
# match of every list and watch, and sits under the 16 KiB request line the listeners accept
# (``runtimes.api.serving``), so the check also holds for callers that never pass through them.
#
# ``shardSelector`` (KEP-5866, ``ShardedListAndWatch``, alpha in kube and always on here) keeps
# the objects whose FNV-1a hash of ``metadata.uid`` or ``metadata.namespace`` falls in the ranges
# it names (``runtimes.apimachinery.selectors.shards``); it is part of the `Selection`, so every
# read that filters (SQL, the watch cache, loop reads, watches and their resumes, deletecollection)
# applies it where it applies the label and field selectors.

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"
INCLUDE_OBJECT = ("None", "Metadata", "Object")
MAX_SELECTOR_BYTES = 8 * 1024


@dataclass(frozen=True)
class Selection:
    """Label, field and shard selectors plus the projects a cluster-wide reader may see."""

    labels: LabelSelector = field(default_factory=LabelSelector)
    fields: FieldSelector = field(default_factory=FieldSelector)
    supported_fields: tuple[str, ...] = ()
    namespaces: frozenset[str] | None = None  # None: every namespace is visible
    shard: ShardSelector | None = None

    @property
    def has_selectors(self) -> bool:
        return not (self.labels.empty and self.fields.empty and self.shard is None)

    @property
    def shard_info(self) -> Obj | None:
        """ListMeta.shardInfo: the selector as the request gave it, so a client knows the list
        is its shard (an absent shardInfo tells it the server ignored the option)."""
        return None if self.shard is None else {"selector": self.shard.text}

    def visible(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if not self.visible(meta.get("namespace", "")):
            return False
        if not self.labels.empty and not self.labels.matches(meta.get("labels") or {}):
            return False
        if self.shard is not None and not self.shard.matches(
            str(meta.get("uid") or ""), str(meta.get("namespace") or "")
        ):
            return False
        if self.fields.empty:
            return True
        return self.fields.matches(field_values(obj, self.fields.fields))

    def matches_indexed(
        self, labels: Mapping[str, str], fields: Mapping[str, str], uid_hash: int
    ) -> bool:
        """`matches` for an object known by its labels, its selectable field values and the
        hash of its uid (the watch cache's entries), for a key already known to be visible."""
        if not self.labels.empty and not self.labels.matches(labels):
            return False
        if self.shard is not None and not self.shard.contains(
            uid_hash if self.shard.key == UID else field_hash(fields.get("metadata.namespace", ""))
        ):
            return False
        return self.fields.empty or self.fields.matches(fields)

    def index_lookups(self) -> tuple[Lookup, ...]:
        """Requirements every match meets that the watch cache's indexes answer before any
        object is looked at: a label with one of some values (`=`, `==`, `in`), a label present
        (`exists`, and `gt`/`lt`, which need it), a selectable field equal to a value."""
        found: list[Lookup] = []
        for r in self.labels.requirements:
            if r.operator in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
                found.append(("label", r.key, tuple(r.values)))
            elif r.operator in (Operator.EXISTS, Operator.GREATER_THAN, Operator.LESS_THAN):
                found.append(("label", r.key, ()))
        found += [("field", t.field, (t.value,)) for t in self.fields.terms if not t.negated]
        return tuple(found)


@dataclass(frozen=True)
class ListOptions:
    watch: bool = False
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False
    timeout_seconds: int | None = None
    include_object: str = "Metadata"
    selection: Selection = field(default_factory=Selection)

    @property
    def revision(self) -> int | None:
        """The requested resourceVersion as a number (None when unset)."""
        return int(self.resource_version) if self.resource_version else None


def supported_fields(rt: ResourceType) -> tuple[str, ...]:
    return ("metadata.name", "metadata.namespace", *rt.selectable_fields)


def parse_revision(text: str) -> int:
    """resourceVersions are decimal revisions; anything else is a 400 before any work."""
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        raise errors.bad_request(
            f"invalid resource version: {text!r}",
            fix="resourceVersion must be a value this server returned (a decimal number); "
            "omit it to read the latest state.",
        )
    return int(text)


def _bool(query: Mapping[str, str], name: str) -> bool | None:
    if name not in query:
        return None
    raw = query[name].lower()
    if raw in {"true", "1"}:
        return True
    if raw in {"false", "0", ""}:
        return False
    raise errors.bad_request(f'{name}: invalid boolean value "{query[name]}"')


def _int(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(f'{name}: invalid integer value "{raw}"') from None


def selection(
    rt: ResourceType,
    label_text: str,
    field_text: str,
    namespaces: list[str] | None = None,
    shard_text: str = "",
) -> Selection:
    supported = supported_fields(rt)
    for parameter, text in (
        ("labelSelector", label_text),
        ("fieldSelector", field_text),
        ("shardSelector", shard_text),
    ):
        if len(text.encode("utf-8", "surrogatepass")) > MAX_SELECTOR_BYTES:
            raise errors.bad_request(
                f"{parameter}: Too long: may not be more than {MAX_SELECTOR_BYTES} bytes",
                fix=f"Shorten the {parameter}: select on fewer values, or on one label that "
                "the objects you want share.",
            )
    try:
        labels = parse_label_selector(label_text)
        fields = parse_field_selector(field_text, supported)
    except SelectorError as exc:
        raise errors.bad_request(
            str(exc),
            fix="Label selectors look like `app=trainer,tier in (gold,silver),!legacy`; field "
            f"selectors support {', '.join(supported)} with =, == and !=.",
        ) from None
    return Selection(
        labels,
        fields,
        supported,
        None if namespaces is None else frozenset(namespaces),
        shard(shard_text),
    )


def shard(text: str) -> ShardSelector | None:
    """The shardSelector option, or None when absent; malformed, a 400 naming the problem."""
    try:
        return parse_shard_selector(text)
    except SelectorError as exc:
        raise errors.ApiError(
            "BadRequest",
            f"invalid shardSelector: {exc}",
            causes=[FieldError("shardSelector", "FieldValueInvalid", str(exc))],
            fix="A shard selector looks like shardRange(object.metadata.uid, "
            "'0x0000000000000000', '0x8000000000000000'): the field object.metadata.uid or "
            "object.metadata.namespace, then the start (inclusive) and end (exclusive) of the "
            "hash range, each '0x' and 16 lowercase hex digits ('0x10000000000000000' ends "
            "the last shard); join ranges of the same field with ||.",
        ) from None


def _list_problems(opts: ListOptions) -> list[FieldError]:
    problems: list[FieldError] = []
    match = opts.resource_version_match
    if match:
        if not opts.resource_version:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if opts.continue_token:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in (EXACT, NOT_OLDER_THAN):
            problems.append(
                not_supported("resourceVersionMatch", match, [EXACT, NOT_OLDER_THAN, ""])
            )
        if match == EXACT and opts.resource_version == "0":
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if opts.send_initial_events is not None:
        problems.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return problems


def _watch_problems(opts: ListOptions) -> list[FieldError]:
    problems: list[FieldError] = []
    match = opts.resource_version_match
    if opts.send_initial_events is not None and match != NOT_OLDER_THAN:
        problems.append(
            forbidden(
                "resourceVersionMatch",
                f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
            )
        )
    if match:
        if opts.send_initial_events is None:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != NOT_OLDER_THAN:
            problems.append(not_supported("resourceVersionMatch", match, [NOT_OLDER_THAN]))
        if opts.continue_token:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    return problems


def parse_list_options(
    rt: ResourceType,
    query: Mapping[str, str],
    namespaces: list[str] | None = None,
    watch: bool = False,
) -> ListOptions:
    """Reads a list or watch query; raises 400 for garbage and 422 for forbidden combinations."""
    resource_version = query.get("resourceVersion", "")
    if resource_version:
        parse_revision(resource_version)
    include = query.get("includeObject") or "Metadata"
    if include not in INCLUDE_OBJECT:
        raise errors.bad_request(f'unrecognized includeObject value: "{include}"')
    limit = max(_int(query, "limit") or 0, 0)
    if resource_version == "0":
        # kube's cacher serves resourceVersion=0 whole from the watch cache: it ignores
        # `limit` and writes no continue token (cacher.go computeListLimit), also when a
        # continue token names where to start; a client paging gets the rest at once.
        limit = 0
    timeout = _int(query, "timeoutSeconds")
    opts = ListOptions(
        watch=watch,
        resource_version=resource_version,
        resource_version_match=query.get("resourceVersionMatch", ""),
        limit=limit,
        continue_token=query.get("continue", ""),
        send_initial_events=_bool(query, "sendInitialEvents"),
        allow_bookmarks=bool(_bool(query, "allowWatchBookmarks")),
        timeout_seconds=timeout if timeout is None or timeout > 0 else None,
        include_object=include,
        selection=selection(
            rt,
            query.get("labelSelector", ""),
            query.get("fieldSelector", ""),
            namespaces,
            query.get("shardSelector", ""),
        ),
    )
    problems = _watch_problems(opts) if watch else _list_problems(opts)
    if problems:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", problems)
    return opts
