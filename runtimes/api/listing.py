"""Reads: list responses (plain or Table) and single objects.

A list is served from a snapshot at one revision: the latest (consistent read), or an older
one named by a continue token or `resourceVersionMatch=Exact`. Selectors filter it, `limit`
pages it in key order, and every page reports the first page's resourceVersion, as
kube-apiserver's etcd3 store does. A list at `resourceVersion=0` is never paged: kube's cacher
serves it whole (`listoptions.parse_list_options` drops its limit).
"""

from __future__ import annotations

import bisect
import itertools
import time
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from django.http import QueryDict
from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.accounts import access
from runtimes.api import continuation, media, metrics, tables
from runtimes.api.base import KubeView, respond
from runtimes.api.listoptions import (
    EXACT,
    ListOptions,
    Selection,
    parse_list_options,
    selection,
)
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.registry.resources import ResourceType
from runtimes.storage import compaction, snapshots, store
from runtimes.watch import hub
from runtimes.watch.cache import CachedSnapshot, Entry, Lookup

Key = tuple[str, str]

# How long a read naming a resourceVersion ahead of the store waits for it (kube: 3 s).
WAIT_FOR_REVISION_SECONDS = 3.0
# Bodies are read in chunks while a selector filters, so a page never loads the whole kind.
SCAN_CHUNK = 200
TOO_LARGE_CAUSE = "ResourceVersionTooLarge"


@dataclass
class Page:
    # The objects; with `stored=True`, each as kept: a watch cache entry, or (from SQL, with no
    # selectors) the stored JSON text.
    items: list[Any]
    revision: int
    continue_token: str = ""
    remaining: int | None = None
    shard_info: Obj | None = None  # ListMeta.shardInfo of a sharded list (KEP-5866)

    def list_meta(self) -> Obj:
        meta: Obj = {"resourceVersion": str(self.revision)}
        if self.continue_token:
            meta["continue"] = self.continue_token
        if self.remaining is not None:
            meta["remainingItemCount"] = self.remaining
        if self.shard_info is not None:
            meta["shardInfo"] = self.shard_info
        return meta


def readable_namespaces(rt: ResourceType, user: Any, namespace: str | None) -> list[str] | None:
    """A cluster-wide list of a namespaced kind shows only the projects the user may read."""
    if namespace is not None or not rt.namespaced:
        return None
    return access.readable_projects(user)


def too_large(wanted: int, current: int) -> errors.ApiError:
    return errors.ApiError(
        "Timeout",
        # kube's NewTooLargeResourceVersionError is a NewTimeoutError: "Timeout: " leads.
        f"Timeout: Too large resource version: {wanted}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ]
        },
        fix="The resourceVersion is ahead of this server: list without resourceVersion.",
        retry_after=1,
    )


def wait_for_revision(wanted: int) -> None:
    """Waits (≤3 s) until the store has reached `wanted` (else 504 ResourceVersionTooLarge).
    Once this process's hub has read `wanted` from the store, the store has it: no query (a
    herd's watches all start from revisions the hub has long read)."""
    if hub.get_hub().last >= wanted:
        return
    deadline = time.monotonic() + WAIT_FOR_REVISION_SECONDS
    current = store.current_revision()
    while current < wanted:
        if time.monotonic() >= deadline:
            raise too_large(wanted, current)
        time.sleep(0.05)
        current = store.current_revision()


def _expired_continue(after: Key) -> errors.ApiError:
    return errors.expired(
        "The provided continue parameter is too old to display a consistent list result. You "
        "can start a new list without the continue parameter, or use the continue token in "
        "this response to retrieve the remainder of the results. Continuing with the provided "
        "token results in an inconsistent list - objects that were created, modified, or "
        "deleted between the time the first chunk was returned and now may show up in the list.",
        **{"continue": continuation.encode(continuation.INCONSISTENT, after)},
    )


def _cache_at(
    rt: ResourceType, ns: str | None, revision: int | None, lookups: tuple[Lookup, ...]
) -> CachedSnapshot | None:
    """The kind at `revision` (None: the latest) from this process's watch cache, if on."""
    if not settings.NODUS_WATCH_CACHE:
        return None
    return hub.get_hub().cached(rt.key, ns, revision, lookups)


def _latest(
    rt: ResourceType, ns: str | None, lookups: tuple[Lookup, ...], at_least: int | None
) -> Any:
    """The latest state, from the cache once it has applied `at_least` (None: the store's
    current revision, read now: a consistent read, KEP-2340), else from SQL."""
    caught_up = _caught_up_cache(at_least)
    if caught_up is not None:
        running, wanted = caught_up
        cached = running.cached(rt.key, ns, None, lookups)
        if cached is not None and cached.revision >= wanted:
            return cached
    return snapshots.latest(rt.key, ns)


def _caught_up_cache(at_least: int | None) -> tuple[hub.Hub, int] | None:
    """This process's hub once its cache has applied `at_least` (None: the store's current
    revision, read now: a consistent read, KEP-2340), with that revision; None when the cache
    is off or does not get there in time (SQL answers)."""
    if not settings.NODUS_WATCH_CACHE:
        return None
    wanted = store.current_revision() if at_least is None else at_least
    running = hub.get_hub()
    return (running, wanted) if running.wait_for(wanted, WAIT_FOR_REVISION_SECONDS) else None


def cached_object(
    rt: ResourceType, namespace: str | None, name: str, at_least: int | None
) -> Entry | None:
    """One object's latest entry in the watch cache once it has applied `at_least` (None:
    the store's current revision, read now: a consistent read), or None when the cache can't
    answer (off, warming, behind) or doesn't hold it: then SQL answers, and says why."""
    caught_up = _caught_up_cache(at_least)
    if caught_up is None:
        return None
    running, wanted = caught_up
    found = running.latest_entry(rt.key, (namespace or "", name))
    if found is None or found[0] is None or found[1] < wanted:
        return None
    return found[0]


def _snapshot(rt: ResourceType, namespace: str | None, opts: ListOptions) -> tuple[Any, Key]:
    """The snapshot to serve and the key to start after."""
    ns = namespace if rt.namespaced else None
    lookups = opts.selection.index_lookups()
    if opts.continue_token:
        if opts.resource_version not in ("", "0"):
            raise errors.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        revision, after = continuation.decode(opts.continue_token)
        if revision == continuation.INCONSISTENT:
            return _latest(rt, ns, lookups, None), after
        if revision > store.current_revision():
            raise errors.bad_request("invalid continue token: the resourceVersion is in the future")
        # Below the event log's window every worker answers 410, whatever its cache still holds.
        if compaction.is_expired(revision):
            raise _expired_continue(after)
        cached = _cache_at(rt, ns, revision, lookups)
        if cached is not None:
            return cached, after
        try:
            return snapshots.at(rt.key, ns, revision), after
        except snapshots.Compacted:
            raise _expired_continue(after) from None
    wanted = opts.revision
    if not wanted:  # unset: the latest (consistent); "0": any, and the latest is one
        return _latest(rt, ns, lookups, None if opts.resource_version == "" else 0), ("", "")
    wait_for_revision(wanted)
    match = opts.resource_version_match
    # Legacy rule: a resourceVersion with a limit and no match means Exact.
    if match == EXACT or (not match and opts.limit):
        if compaction.is_expired(wanted):
            raise errors.expired("The resourceVersion for the provided list is too old.")
        cached = _cache_at(rt, ns, wanted, lookups)
        if cached is not None:
            return cached, ("", "")
        try:
            return snapshots.at(rt.key, ns, wanted), ("", "")
        except snapshots.Compacted:
            raise errors.expired("The resourceVersion for the provided list is too old.") from None
    return _latest(rt, ns, lookups, wanted), ("", "")


def _key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def list_page(
    rt: ResourceType, namespace: str | None, opts: ListOptions, stored: bool = False
) -> Page:
    """One page of a list, generic over kinds; the API and the console both read through it.

    `stored=True` is for writing the items out as JSON: without selectors nothing needs to
    look inside them, so they stay the stored text, never parsed and re-serialised (for
    10,000 runtimes that is most of a list's time); with selectors they are objects as ever.

    A shard selector filters like the others (so a sharded page, like a selected one, has no
    remainingItemCount), and the page says so in its shardInfo.
    """
    page = _page(rt, namespace, opts, stored)
    page.shard_info = opts.selection.shard_info
    return page


def _page(rt: ResourceType, namespace: str | None, opts: ListOptions, stored: bool) -> Page:
    snap, after = _snapshot(rt, namespace, opts)
    cached = isinstance(snap, CachedSnapshot)
    metrics.list_served(rt.plural, cached, snap.index if cached else "")
    if cached:
        page, fetched = _cached_page(snap, after, opts, stored)
        metrics.cache_list_objects(rt.plural, snap.index, fetched, len(page.items))
        return page
    chosen = opts.selection
    keys = [k for k in snap.keys if k > after and chosen.visible(k[0])]
    limit = opts.limit
    with_snapshot = _SnapshotTries(snap, after)
    if not chosen.has_selectors:
        page_keys = keys[:limit] if limit else keys
        items: list[Any] = (
            with_snapshot.stored(page_keys) if stored else with_snapshot.bodies(page_keys)
        )
        if limit and len(keys) > limit:
            return Page(
                items,
                snap.revision,
                continuation.encode(snap.revision, page_keys[-1]),
                len(keys) - limit,
            )
        return Page(items, snap.revision)
    items = []
    last: Key | None = None
    for start in range(0, len(keys), SCAN_CHUNK):
        for obj in with_snapshot.bodies(keys[start : start + SCAN_CHUNK]):
            if limit and len(items) >= limit:
                assert last is not None
                return Page(items, snap.revision, continuation.encode(snap.revision, last))
            last = _key(obj)
            if chosen.matches(obj):
                items.append(obj)
    return Page(items, snap.revision)


def _cached_page(
    snap: CachedSnapshot, after: Key, opts: ListOptions, stored: bool
) -> tuple[Page, int]:
    """`list_page` from the watch cache, and how many entries it looked at: selectors match
    each entry's labels and fields, and nothing is parsed but the page's items (and not those
    when `stored`)."""
    chosen = opts.selection
    limit = opts.limit
    start = bisect.bisect_right(snap.keys, after) if after != ("", "") else 0
    keys: list[Key] = []
    fetched = 0
    for key in itertools.islice(snap.keys, start, None):
        if not chosen.visible(key[0]):
            continue
        fetched += 1
        entry = snap.entries[key]
        if chosen.has_selectors and not chosen.matches_indexed(
            entry.labels, entry.fields, entry.uid_hash
        ):
            continue
        keys.append(key)
        if limit and chosen.has_selectors and len(keys) > limit:
            break  # one past the page: there is more
    page_keys = keys[:limit] if limit else keys
    items: list[Any] = snap.stored(page_keys) if stored else snap.bodies(page_keys)
    if not limit or not page_keys:
        return Page(items, snap.revision), fetched
    if not chosen.has_selectors:
        if len(keys) > limit:
            token = continuation.encode(snap.revision, page_keys[-1])
            return Page(items, snap.revision, token, len(keys) - limit), fetched
        return Page(items, snap.revision), fetched
    # As from SQL: with selectors, a full page continues when any object follows its last.
    if len(keys) > limit or (
        len(keys) == limit and snap.last is not None and snap.last > page_keys[-1]
    ):
        token = continuation.encode(snap.revision, page_keys[-1])
        return Page(items, snap.revision, token), fetched
    return Page(items, snap.revision), fetched


@dataclass
class _SnapshotTries:
    """Reads bodies from a snapshot, turning a compaction race into the right 410."""

    snap: Any
    after: Key

    def bodies(self, keys: list[Key]) -> list[Obj]:
        try:
            result: list[Obj] = self.snap.bodies(keys)
        except snapshots.Compacted:
            raise _expired_continue(self.after) from None
        return result

    def stored(self, keys: list[Key]) -> list[str]:
        try:
            result: list[str] = self.snap.stored(keys)
        except snapshots.Compacted:
            raise _expired_continue(self.after) from None
        return result


def list_response(view: KubeView, request: Request, namespace: str | None) -> Response:
    if (view.rendering or ("", ""))[0] == media.PARTIAL:
        raise media.wrong_partial(media.PARTIAL)
    namespaces = readable_namespaces(view.rt, request.user, namespace)
    opts = parse_list_options(view.rt, request.query_params, namespaces)
    return respond(orjson.Fragment(list_body(view.rt, view.rendering, namespace, opts)))


def list_body(
    rt: ResourceType, rendering: tuple[str, str] | None, namespace: str | None, opts: ListOptions
) -> bytes:
    """The list (or Table, or PartialObjectMetadataList) as JSON."""
    # The body is serialised here, while the collector is paused, so the thousands of parsed
    # objects and rows are gone before it runs again: it never has to walk them.
    with snapshots.gc_paused():
        page = list_page(rt, namespace, opts, stored=True)
        # Cache entries and stored text are written out as they are; a Table's rows and
        # metadata items are encoded once per object revision and kept on its cache entry.
        kind, version = rendering or ("", "")
        if kind == "Table":
            body = tables.encoded_table(
                rt, page.items, version, page.list_meta(), opts.include_object
            )
        elif kind == media.PARTIAL_LIST:
            encoded = tables.encoded_partials(rt, page.items, version)
            items = [orjson.Fragment(i) for i in encoded]
            body = orjson.dumps(partial_list(version, page.list_meta(), items))
        else:
            items = [orjson.Fragment(stored_text(i)) for i in page.items]
            body = orjson.dumps(plain_list(rt, page.list_meta(), items))
        del page
    return body


def stored_text(item: Any) -> str | bytes:
    """An item of a `stored=True` page as JSON: a cache entry's text, stored text, or an
    object (a selected page from SQL)."""
    if isinstance(item, Entry):
        return item.raw
    return item if isinstance(item, str) else orjson.dumps(item)


def plain_list(rt: ResourceType, list_meta: Obj, items: list[Any]) -> Obj:
    return {
        "apiVersion": rt.api_version,
        "kind": f"{rt.kind}List",
        "metadata": list_meta,
        "items": items,
    }


def partial_list(version: str, list_meta: Obj, items: list[Any]) -> Obj:
    return {
        "kind": media.PARTIAL_LIST,
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": list_meta,
        "items": items,
    }


def select(view: KubeView, request: Request, namespace: str | None) -> Page:
    """Every visible object the request's selectors match (deletecollection), with the
    revision they were read at."""
    query: QueryDict = request.query_params
    namespaces = readable_namespaces(view.rt, request.user, namespace)
    opts = ListOptions(
        selection=_selection(view.rt, query, namespaces),
    )
    return list_page(view.rt, namespace, opts)


def _selection(rt: ResourceType, query: QueryDict, namespaces: list[str] | None) -> Selection:
    # deletecollection takes kube's ListOptions, shardSelector among them: a sharded client
    # deletes only its own shard's objects.
    return selection(
        rt,
        query.get("labelSelector", ""),
        query.get("fieldSelector", ""),
        namespaces,
        query.get("shardSelector", ""),
    )


def object_response(view: KubeView, request: Request, item: Entry | Obj) -> Response:
    """One object as asked: itself, its PartialObjectMetadata, or a one-row Table; from a watch
    cache entry, its text and kept encodings are written out as they are."""
    rendering = view.rendering or ("", "")
    if rendering[0] == media.PARTIAL_LIST:
        raise media.wrong_partial(media.PARTIAL_LIST)
    if rendering[0] == media.PARTIAL:
        return respond(orjson.Fragment(tables.encoded_partials(view.rt, [item], rendering[1])[0]))
    if rendering[0] == "Table":
        include = request.query_params.get("includeObject") or "Metadata"
        if include not in ("None", "Metadata", "Object"):
            raise errors.bad_request(f'unrecognized includeObject value: "{include}"')
        revision = (
            str(item.revision) if isinstance(item, Entry) else item["metadata"]["resourceVersion"]
        )
        meta = {"resourceVersion": revision}
        return respond(
            orjson.Fragment(tables.encoded_table(view.rt, [item], rendering[1], meta, include))
        )
    return respond(orjson.Fragment(item.raw) if isinstance(item, Entry) else item)
