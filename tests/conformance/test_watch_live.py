"""Watch sequences against a live daphne (in-process clients cannot stream).

The server is tests/conftest.py's `tight_server`: bookmarks every second, a 60-revision event
window, so what kube does over minutes happens here within seconds. Every sequence works on
objects named and labelled with its own suffix `{u}`, and watches select that label.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.conftest import Live
from tests.conformance.harness import (
    ACCS,
    MERGE,
    TRS,
    Events,
    Eventually,
    Sequence,
    Step,
    Watch,
    failure,
    params,
    run,
    runtime,
    with_meta,
)
from tests.conformance.patterns import (
    ABSENT,
    RV,
    Re,
    contains,
    later,
)

WATCH_GO = "kubernetes test/e2e/apimachinery/watch.go"
WATCHLIST = "kubernetes test/integration/apimachinery/watchlist_test.go; KEP-3157"
CACHER = "apiserver pkg/storage/cacher/cacher_whitebox_test.go; watch_cache.go"
BASIC = "apiextensions-apiserver test/integration/basic_test.go"
SELECT = "labelSelector=t%3D{u}"


def made(name: str, save: str = "rv", **labels: str) -> Step:
    return Step(
        "POST",
        TRS,
        201,
        with_meta(runtime(f"{name}-{{u}}"), labels={"t": "{u}", **labels}),
        save={save: "metadata.resourceVersion"},
    )


def changed(name: str, body: Any, save: str = "") -> Step:
    return Step(
        "PATCH",
        f"{TRS}/{name}-{{u}}",
        200,
        body,
        MERGE,
        save={save: "metadata.resourceVersion"} if save else {},
    )


def removed(name: str) -> Step:
    return Step("DELETE", f"{TRS}/{name}-{{u}}", 200)


def event(kind: str, name: str, **more: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "object": {
            "kind": "TrainingRuntime",
            "apiVersion": "nodus.dev/v1beta1",
            "metadata": {"name": f"{name}-{{u}}", "resourceVersion": RV, **more},
        },
    }


SEQUENCES = [
    Sequence(
        "watch-from-a-list-sees-added-modified-deleted-in-order",
        f"{WATCH_GO} should observe add, update, and delete watch notifications; {BASIC} "
        "TestNamespaceScopedCRUD",
        (
            Step("GET", f"{TRS}?{SELECT}", 200, save={"at": "metadata.resourceVersion"}),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{at}}&timeoutSeconds=20"),
            made("a"),
            changed("a", {"spec": {"task": "DPO"}}),
            removed("a"),
            Events(
                [
                    event("ADDED", "a", resourceVersion="{rv}"),
                    {
                        "type": "MODIFIED",
                        "object": {
                            "spec": {"task": "DPO"},
                            "metadata": {"resourceVersion": later("rv")},
                        },
                    },
                    event("DELETED", "a"),
                ]
            ),
        ),
    ),
    Sequence(
        "watch-without-a-resource-version-starts-with-synthetic-added-events",
        "api-conventions Watch (resourceVersion unset: the current state as ADDED, then changes)",
        (
            made("a"),
            made("b"),
            Watch(f"{TRS}?watch=1&{SELECT}&timeoutSeconds=20"),
            Events([event("ADDED", "a"), event("ADDED", "b")]),
            changed("a", {"metadata": {"annotations": {"n": "1"}}}),
            Events([event("MODIFIED", "a", annotations={"n": "1"})]),
        ),
    ),
    Sequence(
        "watch-from-resource-version-zero-starts-from-any-state",
        'api-conventions Resource versions (watch resourceVersion="0")',
        (
            made("a"),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion=0&timeoutSeconds=20"),
            Events([event("ADDED", "a")]),
        ),
    ),
    Sequence(
        "watch-resumes-after-a-resource-version-without-repeats",
        f"{WATCH_GO} should be able to start watching from a specific resource version",
        (
            made("a"),
            changed("a", {"metadata": {"annotations": {"n": "1"}}}, save="mid"),
            changed("a", {"metadata": {"annotations": {"n": "2"}}}),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{mid}}&timeoutSeconds=20"),
            Events([event("MODIFIED", "a", annotations={"n": "2"})]),
            changed("a", {"metadata": {"annotations": {"n": "3"}}}),
            Events([event("MODIFIED", "a", annotations={"n": "3"})]),
        ),
    ),
    Sequence(
        "watch-by-name-sees-only-that-object",
        f"{BASIC} testFieldSelector (metadata.name=foo)",
        (
            Step("GET", f"{TRS}?{SELECT}", 200, save={"at": "metadata.resourceVersion"}),
            Watch(
                f"{TRS}?watch=1&fieldSelector=metadata.name%3Db-{{u}}&resourceVersion={{at}}&timeoutSeconds=20"
            ),
            made("a"),
            made("b"),
            changed("a", {"metadata": {"annotations": {"n": "1"}}}),
            changed("b", {"metadata": {"annotations": {"n": "1"}}}),
            Events([event("ADDED", "b"), event("MODIFIED", "b", annotations={"n": "1"})]),
        ),
    ),
    Sequence(
        "an-object-entering-a-selection-is-added-and-leaving-it-deleted",
        "apiserver pkg/storage/cacher/cache_watcher.go convertToWatchEvent; "
        "apiextensions-apiserver fieldselector_test.go testWatch (expectObserveRemoval)",
        (
            Step("GET", f"{TRS}?{SELECT}", 200, save={"at": "metadata.resourceVersion"}),
            Watch(
                f"{TRS}?watch=1&labelSelector=tier%3Dgold-{{u}}&resourceVersion={{at}}&timeoutSeconds=20"
            ),
            made("a", tier="lead-{u}"),
            changed("a", {"metadata": {"labels": {"tier": "gold-{u}"}}}),
            changed("a", {"spec": {"task": "DPO"}}),
            changed("a", {"metadata": {"labels": {"tier": "lead-{u}"}}}),
            Events(
                [
                    event("ADDED", "a", labels={"t": "{u}", "tier": "gold-{u}"}),
                    {"type": "MODIFIED", "object": {"spec": {"task": "DPO"}}},
                    event("DELETED", "a"),
                ]
            ),
        ),
    ),
    Sequence(
        "a-field-selector-transition-is-typed-too",
        "apiextensions-apiserver test/integration/fieldselector_test.go testWatch",
        (
            Step("GET", f"{TRS}?{SELECT}", 200, save={"at": "metadata.resourceVersion"}),
            Watch(
                f"{TRS}?watch=1&{SELECT}&fieldSelector=spec.task%3DDPO&resourceVersion={{at}}&timeoutSeconds=20"
            ),
            made("a"),
            changed("a", {"spec": {"task": "DPO"}}),
            changed("a", {"spec": {"task": "KTO"}}),
            Events(
                [
                    {"type": "ADDED", "object": {"spec": {"task": "DPO"}}},
                    {"type": "DELETED", "object": {"metadata": {"name": "a-{u}"}}},
                ]
            ),
        ),
    ),
    Sequence(
        "a-bookmark-carries-only-kind-api-version-and-resource-version",
        f"{CACHER} (bookmarks); api-conventions Watch bookmarks",
        (
            made("a"),
            Watch(
                f"{TRS}?watch=1&{SELECT}&resourceVersion={{rv}}&allowWatchBookmarks=true&timeoutSeconds=20"
            ),
            Events(
                [
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": "TrainingRuntime",
                            "apiVersion": "nodus.dev/v1beta1",
                            "metadata": {"resourceVersion": RV, "name": ABSENT, "uid": ABSENT},
                            "spec": ABSENT,
                        },
                    }
                ]
            ),
        ),
    ),
    Sequence(
        "without-allow-watch-bookmarks-there-are-none",
        f"{CACHER} (bookmarks only when asked)",
        (
            made("a"),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{rv}}&timeoutSeconds=3"),
            changed("a", {"metadata": {"annotations": {"n": "1"}}}),
            Events([event("MODIFIED", "a")], end=True),
        ),
    ),
    Sequence(
        "watch-list-sends-initial-events-then-a-bookmark-marking-their-end",
        f"{WATCHLIST} (sendInitialEvents, k8s.io/initial-events-end)",
        (
            made("a"),
            made("b"),
            Watch(
                f"{TRS}?watch=1&{SELECT}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                "&allowWatchBookmarks=true&timeoutSeconds=20"
            ),
            Events(
                [
                    event("ADDED", "a"),
                    event("ADDED", "b"),
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": "TrainingRuntime",
                            "metadata": {
                                "resourceVersion": RV,
                                "annotations": {"k8s.io/initial-events-end": "true"},
                            },
                        },
                    },
                ]
            ),
            changed("a", {"metadata": {"annotations": {"n": "1"}}}),
            Events([event("MODIFIED", "a")], skip_bookmarks=True),
        ),
    ),
    Sequence(
        "watch-list-of-nothing-is-just-the-end-bookmark",
        WATCHLIST,
        (
            Watch(
                f"{TRS}?watch=1&{SELECT}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                "&allowWatchBookmarks=true&timeoutSeconds=20"
            ),
            Events(
                [
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "metadata": {"annotations": {"k8s.io/initial-events-end": "true"}}
                        },
                    }
                ]
            ),
        ),
    ),
    Sequence(
        "watch-ends-cleanly-at-timeout-seconds",
        f"{WATCH_GO}; apiserver pkg/endpoints/handlers/watch.go (timeoutSeconds)",
        (
            made("a"),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{rv}}&timeoutSeconds=1"),
            Events([], end=True),
        ),
    ),
    Sequence(
        "a-cluster-scoped-watch-starts-with-the-catalog",
        f"{BASIC} TestClusterScopedCRUD (watch)",
        (
            Watch(f"{ACCS}?watch=1&fieldSelector=metadata.name%3Dl4-24g-pcie&timeoutSeconds=20"),
            Events(
                [
                    {
                        "type": "ADDED",
                        "object": {
                            "kind": "Accelerator",
                            "metadata": {"name": "l4-24g-pcie", "namespace": ABSENT},
                        },
                    }
                ]
            ),
        ),
    ),
    Sequence(
        "a-deleted-event-carries-the-last-state-at-a-new-resource-version",
        "apiserver pkg/storage/etcd3/watcher.go (DELETED with the previous object, the "
        "delete's revision)",
        (
            made("a"),
            changed("a", {"metadata": {"annotations": {"n": "1"}}}, save="last"),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{last}}&timeoutSeconds=20"),
            removed("a"),
            Events([event("DELETED", "a", annotations={"n": "1"}, resourceVersion=later("last"))]),
        ),
    ),
    Sequence(
        "finalizers-turn-delete-into-modified-then-deleted",
        "apiextensions-apiserver test/integration/finalization_test.go TestFinalization (watch)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a-{u}"), labels={"t": "{u}"}, finalizers=["nodus.dev/hold"]),
                save={"rv": "metadata.resourceVersion"},
            ),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{rv}}&timeoutSeconds=20"),
            removed("a"),
            changed("a", {"metadata": {"finalizers": None}}),
            Events(
                [
                    {"type": "MODIFIED", "object": {"metadata": {"deletionTimestamp": Re(".+")}}},
                    {"type": "DELETED", "object": {"metadata": {"name": "a-{u}"}}},
                ]
            ),
        ),
    ),
    Sequence(
        "a-second-delete-of-a-terminating-object-writes-nothing",
        "apiserver pkg/registry/generic/registry/store.go updateForGracefulDeletionAndFinalizers "
        "(the object comes back unchanged); pkg/storage/etcd3/store.go GuaranteedUpdate (an "
        "unchanged object is not written: no new resourceVersion, no event)",
        (
            Step(
                "POST",
                TRS,
                201,
                with_meta(runtime("a-{u}"), labels={"t": "{u}"}, finalizers=["nodus.dev/hold"]),
                save={"rv": "metadata.resourceVersion"},
            ),
            Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{rv}}&timeoutSeconds=20"),
            Step("DELETE", f"{TRS}/a-{{u}}", 200, save={"deleting": "metadata.resourceVersion"}),
            Step(
                "DELETE",
                f"{TRS}/a-{{u}}",
                200,
                expect={"metadata": {"resourceVersion": "{deleting}"}},
            ),
            Step(
                "DELETE",
                f"{TRS}/a-{{u}}",
                200,
                {"propagationPolicy": "Background"},
                expect={"metadata": {"resourceVersion": "{deleting}"}},
            ),
            changed("a", {"metadata": {"finalizers": None}}),
            # Had a repeated DELETE written, its MODIFIED would come before the DELETED.
            Events(
                [
                    {
                        "type": "MODIFIED",
                        "object": {"metadata": {"resourceVersion": "{deleting}"}},
                    },
                    {"type": "DELETED", "object": {"metadata": {"name": "a-{u}"}}},
                ]
            ),
        ),
    ),
    Sequence(
        "a-watch-from-a-compacted-resource-version-is-one-410-error-event",
        f"{CACHER}; apiserver pkg/storage/cacher/watch_cache_history.go (too old resource version)",
        (
            made("old"),
            *(changed("old", {"metadata": {"annotations": {"i": str(i)}}}) for i in range(70)),
            Eventually(
                (
                    Watch(f"{TRS}?watch=1&{SELECT}&resourceVersion={{rv}}&timeoutSeconds=2"),
                    Events(
                        [
                            {
                                "type": "ERROR",
                                "object": failure(
                                    410,
                                    "Expired",
                                    Re(r"too old resource version: {rv} \(\d+\)"),
                                ),
                            }
                        ]
                    ),
                )
            ),
        ),
    ),
]


# Watch requests refused before anything streams (a refused watch still goes through the
# streaming view, which in-process clients cannot drive).
REFUSED = [
    Sequence(
        "resource-version-match-on-a-watch-needs-send-initial-events",
        "apimachinery pkg/apis/meta/internalversion/validation validateWatchOptions",
        (
            Watch(
                f"{TRS}?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan",
                status=422,
                expect=failure(
                    422,
                    "Invalid",
                    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                    {"group": "meta.k8s.io", "kind": "ListOptions"},
                ),
            ),
        ),
    ),
    Sequence(
        "send-initial-events-without-not-older-than-is-422",
        "apimachinery pkg/apis/meta/internalversion/validation validateWatchOptions",
        (
            Watch(
                f"{TRS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
                status=422,
                expect=failure(
                    422,
                    "Invalid",
                    contains(
                        "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                        "resourceVersionMatch to NotOlderThan"
                    ),
                ),
            ),
        ),
    ),
    Sequence(
        "a-watch-from-an-unparsable-resource-version-is-400",
        "apiserver pkg/storage/cacher/cacher.go Watch (ParseResourceVersion)",
        (
            Watch(
                f"{TRS}?watch=1&resourceVersion=abc",
                status=400,
                expect=failure(400, "BadRequest", contains("invalid resource version")),
            ),
        ),
    ),
    Sequence(
        "a-watch-asking-for-yaml-is-406",
        "apiserver pkg/endpoints/handlers/watch.go (no streaming YAML serializer)",
        (
            Watch(
                f"{TRS}?watch=1",
                status=406,
                headers={"Accept": "application/yaml"},
                expect=failure(406, "NotAcceptable"),
            ),
        ),
    ),
]


SEQUENCES += REFUSED


@pytest.fixture(scope="module")
def live(tight_server: Any) -> Iterator[Live]:
    transport = Live(tight_server)
    yield transport
    transport.close()


@pytest.mark.parametrize("sequence", params(SEQUENCES))
def test_sequence(sequence: Sequence, live: Live, unique: str) -> None:
    run(sequence, live, unique)
