"""Prometheus metrics: requests by verb, resource and code, latency, open watches, log lag.

Names follow kube-apiserver's where one exists (`apiserver_request_total`,
`apiserver_request_duration_seconds`, `apiserver_longrunning_requests`), so dashboards written
for a cluster read ours. Every daphne worker keeps its own counters; Prometheus scrapes each
worker and sums, as it does for a set of apiservers.

The watch stream calls `watch_opened()` / `watch_closed()`; `/metrics` itself is served by
`runtimes.api.health_views.metrics`.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from prometheus_client import Counter, Gauge, Histogram

# kube-apiserver's buckets, trimmed: a request to us is a few SQL statements, not an etcd trip.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "apiserver_request_total",
    "Requests by verb, resource, subresource and HTTP code (console pages have resource '').",
    ["verb", "resource", "subresource", "code"],
)
LATENCY = Histogram(
    "apiserver_request_duration_seconds",
    "Time to the response headers, by verb, resource and subresource. WATCH is left out: it "
    "lasts as long as the client stays.",
    ["verb", "resource", "subresource"],
    buckets=LATENCY_BUCKETS,
)
OPEN_WATCHES = Gauge(
    "apiserver_longrunning_requests",
    "Open watch streams in this process.",
    ["verb", "resource"],
)
# API Priority and Fairness (runtimes.api.flowcontrol), named and labelled as kube-apiserver's.
SEATS_IN_USE = Gauge(
    "apiserver_flowcontrol_current_executing_seats",
    "Seats taken by the requests executing at each priority level.",
    ["priority_level"],
)
EXECUTING = Gauge(
    "apiserver_flowcontrol_current_executing_requests",
    "Requests executing at each priority level and flow schema.",
    ["priority_level", "flow_schema"],
)
QUEUED = Gauge(
    "apiserver_flowcontrol_current_inqueue_requests",
    "Requests waiting in a queue of each priority level and flow schema.",
    ["priority_level", "flow_schema"],
)
REJECTED = Counter(
    "apiserver_flowcontrol_rejected_requests_total",
    "Requests answered 429: queue-full, time-out (waited too long) or concurrency-limit.",
    ["priority_level", "flow_schema", "reason"],
)
WAIT = Histogram(
    "apiserver_flowcontrol_request_wait_duration_seconds",
    "How long requests waited for seats, by whether they then executed.",
    ["priority_level", "flow_schema", "execute"],
    buckets=(0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30),
)


def flow_queued(level: str, schema: str, change: int) -> None:
    QUEUED.labels(level, schema).inc(change)


def flow_wait(level: str, schema: str, granted: Any) -> None:
    waited = getattr(granted, "waited", None)
    WAIT.labels(level, schema, "true" if waited is not None else "false").observe(waited or 0)


def flow_started(level: str, schema: str, width: int) -> None:
    SEATS_IN_USE.labels(level).inc(width)
    EXECUTING.labels(level, schema).inc()


def flow_finished(level: str, schema: str, width: int) -> None:
    SEATS_IN_USE.labels(level).dec(width)
    EXECUTING.labels(level, schema).dec()


CACHE_LISTS = Counter(
    "apiserver_cache_list_total",
    "Lists (and watches' initial lists) answered from this process's watch cache, by resource "
    "and the index used ('label' or 'field' when one narrowed it, '' for none).",
    ["resource_prefix", "index"],
)
CACHE_LIST_FETCHED = Counter(
    "apiserver_cache_list_fetched_objects_total",
    "Objects a list from the watch cache looked at (an index makes it the objects its narrowest "
    "requirement names, not the namespace's).",
    ["resource_prefix", "index"],
)
CACHE_LIST_RETURNED = Counter(
    "apiserver_cache_list_returned_objects_total",
    "Objects lists from the watch cache returned.",
    ["resource_prefix"],
)
STORAGE_LISTS = Counter(
    "apiserver_storage_list_total",
    "Lists answered from SQL: the cache was off, still warming, or asked for a revision before "
    "its window.",
    ["resource"],
)
PRINTED = Counter(
    "nodus_printed_encodings_total",
    "Table rows' cells ('row') and PartialObjectMetadata ('metadata') written into answers, by "
    "whether the encoding was kept from an earlier answer for the same object revision.",
    ["resource", "form", "reused"],
)
EVENT_LOG_REVISION = Gauge(
    "nodus_event_log_revision", "The newest revision committed to the event log."
)
EVENT_LOG_COMPACTED = Gauge(
    "nodus_event_log_compacted_revision",
    "The oldest revision the event log still holds; watches from before it answer 410 Expired.",
)
EVENT_LOG_LAG = Gauge(
    "nodus_event_log_lag_revisions",
    "How many committed revisions this process's watch hub has not read yet (-1: no hub).",
)

# HTTP method -> kube verb for a request on one named object and on a collection.
_ITEM_VERBS = {
    "GET": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
    "POST": "create",  # a subresource such as compile
}
_COLLECTION_VERBS = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}


def list_served(resource: str, from_cache: bool, index: str = "") -> None:
    if from_cache:
        CACHE_LISTS.labels(resource, index).inc()
    else:
        STORAGE_LISTS.labels(resource).inc()


def cache_list_objects(resource: str, index: str, fetched: int, returned: int) -> None:
    CACHE_LIST_FETCHED.labels(resource, index).inc(fetched)
    CACHE_LIST_RETURNED.labels(resource).inc(returned)


def printed(resource: str, form: str, made: int, reused: int) -> None:
    if made:
        PRINTED.labels(resource, form, "false").inc(made)
    if reused:
        PRINTED.labels(resource, form, "true").inc(reused)


def watch_opened(resource: str = "") -> None:
    OPEN_WATCHES.labels("WATCH", resource).inc()


def watch_closed(resource: str = "") -> None:
    OPEN_WATCHES.labels("WATCH", resource).dec()


def classify(request: HttpRequest) -> tuple[str, str, str]:
    """(verb, resource, subresource) as kube-apiserver labels them.

    Resource requests get kube verbs (list, watch, create...); anything else (discovery,
    health, console pages) gets the HTTP method and an empty resource, as kube does for
    non-resource URLs, so the label values stay few whatever paths clients try.
    """
    match = getattr(request, "resolver_match", None)
    method = request.method or "GET"
    kwargs = match.kwargs if match is not None else {}
    resource = kwargs.get("plural", "")
    if not resource:
        return method, "", ""
    route = getattr(match, "route", "") or ""
    subresource = route.rsplit("/", 1)[-1] if route.endswith(("/status", "/compile")) else ""
    if "name" in kwargs:
        return _ITEM_VERBS.get(method, method.lower()), resource, subresource
    if method == "GET" and request.GET.get("watch", "").lower() in {"1", "true"}:
        return "watch", resource, ""
    return _COLLECTION_VERBS.get(method, method.lower()), resource, subresource


def observe(request: HttpRequest, status: int, seconds: float) -> None:
    verb, resource, subresource = classify(request)
    REQUESTS.labels(verb, resource, subresource, str(status)).inc()
    if verb != "watch":
        LATENCY.labels(verb, resource, subresource).observe(seconds)
