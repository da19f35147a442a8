"""Console pages rendered in-process (Django's test client, signed in as the admin).

The catalog page with 500 runtimes, beside listing those 500 from the store (what the page
cannot do without); the parameters tab of the largest seeded runtime, beside getting it.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.test import Client

from benchmarks.harness import Bench, CaseSkipped, Comparison, case, repeat
from benchmarks.http_cases import manifest

CATALOG_SIZE = 500


def _signed_in_client() -> Client:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=settings.NODUS_ADMIN_USER))
    return client


@case("console")
def console_pages(bench: Bench) -> Iterable[Comparison]:
    from runtimes.registry.kinds import lookup
    from runtimes.storage import store

    server = bench.context["server"]
    rt = lookup("trainingruntimes")
    assert rt is not None
    client = _signed_in_client()
    namespace = server.namespace
    have = len(store.list_objects(rt, namespace)[0])
    for i in range(max(0, CATALOG_SIZE - have)):
        store.create(rt, namespace, manifest(f"catalog-{i:03d}"))
    count = len(store.list_objects(rt, namespace)[0])

    first = client.get("/")
    if first.status_code != 200:
        raise CaseSkipped(f"GET / answered {first.status_code}")
    n = max(10, bench.repeat // 5)  # a page is slow enough that fewer samples say as much
    yield Comparison(
        repeat(f"catalog page, {count} runtimes", n, lambda _i: client.get("/")),
        repeat(f"store.list_objects of {count}", n, lambda _i: store.list_objects(rt, namespace)),
    )

    from benchmarks.validation_cases import largest_seeded_spec

    name, spec = largest_seeded_spec()
    body = manifest("bench-parameters")
    body["spec"] = spec
    store.create(rt, namespace, body)
    tab = f"/p/{namespace}/runtimes/bench-parameters/parameters"
    response = client.get(tab)
    if response.status_code != 200:
        raise CaseSkipped(f"GET {tab} answered {response.status_code}")
    yield Comparison(
        repeat(f"parameters tab ({name})", n, lambda _i: client.get(tab)),
        repeat("store.get of it", n, lambda _i: store.get(rt, namespace, "bench-parameters")),
    )
