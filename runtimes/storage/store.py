"""The generic store: every read and write of every kind goes through here.

Never names a kind. Each write runs in one transaction that locks the revision counter, checks
the object's revision (optimistic concurrency), writes the object row and appends one event
whose id is the new global revision. Writes that change nothing write nothing. Subscribers hear
of a revision only after its transaction commits (`runtimes.storage.events`).
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from runtimes.apimachinery import errors, ownership
from runtimes.apimachinery.meta import KEPT_ON_UPDATE, RESET_ON_CREATE, Obj
from runtimes.apimachinery.objectmeta import (
    canonical,
    check_immutable,
    generate_name,
    metadata_errors,
    now_timestamp,
    spec_changed,
    unchanged,
)
from runtimes.storage import actor, events
from runtimes.storage.kinds import StoredKind, WriteStrategy
from runtimes.storage.models import Project, RevisionCounter, StoredObject, read_counter

FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


@dataclass
class WriteResult:
    object: Obj
    warnings: list[str] = field(default_factory=list)
    created: bool = False
    deleted: bool = (
        False  # the object is gone (delete without finalizers, or last finalizer removed)
    )
    changed: bool = True


class _Stale(Exception):
    """The row moved between our read and our commit; re-read and try again."""


def dumps(obj: Obj) -> str:
    return orjson.dumps(obj).decode()


def loads(text: str) -> Obj:
    value: Obj = orjson.loads(text)
    return value


def current_revision() -> int:
    return read_counter()[0]


def _ns(rt: StoredKind, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def ensure_namespace(rt: StoredKind, namespace: str) -> None:
    if rt.namespaced and not _project_exists(namespace):
        raise errors.namespace_not_found(namespace)


def _project_exists(name: str) -> bool:
    """One statement on the unique name, written out: a namespaced request asks this once and a
    write twice, and building the ORM's query cost more than running it (a tenth of a create)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {Project._meta.db_table} WHERE name = %s LIMIT 1",  # noqa: S608
            [name],
        )
        return cursor.fetchone() is not None


def get(rt: StoredKind, namespace: str | None, name: str) -> Obj:
    row = (
        StoredObject.objects.filter(resource=rt.key, namespace=_ns(rt, namespace), name=name)
        .values_list("body", flat=True)
        .first()
    )
    if row is None:
        raise errors.not_found(rt.plural, rt.group, name)
    return loads(row)


def list_objects(rt: StoredKind, namespace: str | None = None) -> tuple[list[Obj], int]:
    """All objects of a kind (in one namespace, or all) and the revision they are current at.

    One statement reads both the counter and the rows, so the pair is one consistent snapshot on
    SQLite and on PostgreSQL alike: a watch started from that revision misses and repeats nothing.
    """
    counter = RevisionCounter._meta.db_table
    objects = StoredObject._meta.db_table
    where = "resource = %s"
    params: list[Any] = [rt.key]
    if namespace and rt.namespaced:
        where += " AND namespace = %s"
        params.append(namespace)
    sql = (
        f"SELECT 0, value, '', '' FROM {counter} WHERE id = 1 UNION ALL "  # noqa: S608
        f"SELECT 1, revision, namespace || '/' || name, body FROM {objects} WHERE {where} "
        "ORDER BY 1, 3"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    revision = int(rows[0][1])
    return [loads(body) for _, _, _, body in rows[1:]], revision


def count(rt: StoredKind, namespace: str | None = None) -> int:
    """How many objects of a kind are stored (in one namespace, or all): one indexed count."""
    rows = StoredObject.objects.filter(resource=rt.key)
    if namespace and rt.namespaced:
        rows = rows.filter(namespace=namespace)
    return rows.count()


def _apply_field_validation(
    rt: StoredKind,
    strategy: WriteStrategy,
    obj: Obj,
    field_validation: str,
    warnings: list[str],
    decoded: Sequence[str] = (),
) -> None:
    """Unknown fields, with what decoding the body found (`decoded`: repeated keys), judged as
    kube's strict decoder does: a 400 under Strict, warnings under Warn, dropped silently
    under Ignore."""
    unknown = strategy.unknown_fields(obj)
    problems = [*decoded, *(f'unknown field "{p}"' for p in unknown)]
    if problems and field_validation == "Strict":
        raise StrictDecodingError.of(rt, problems)
    if field_validation == "Warn":
        warnings.extend(problems)
    if unknown:
        strategy.prune_unknown(obj)


@dataclass
class StrictDecodingError(errors.ApiError):
    """fieldValidation=Strict refused the body: kube's decoder error, a 400 (a patch's handler
    answers it as a 422 about the patch, `problems` in hand)."""

    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, rt: StoredKind, problems: list[str]) -> StrictDecodingError:
        version = rt.api_version.rpartition("/")[2]
        return cls(
            "BadRequest",
            errors.cannot_be_handled(
                rt.kind, version, rt.kind, "strict decoding error: " + ", ".join(problems)
            ),
            fix="Remove the unknown fields and give each field once (`kubectl explain "
            f"{rt.plural} --recursive` lists the known ones), or send fieldValidation=Warn "
            "to have unknown fields dropped with a warning.",
            problems=problems,
        )


def _validate(rt: StoredKind, strategy: WriteStrategy, obj: Obj, old: Obj | None) -> None:
    problems = metadata_errors(obj, rt.namespaced, old) + strategy.validate(obj, old)
    if problems:
        raise errors.invalid(rt.kind, rt.group, obj["metadata"].get("name", ""), problems)


def _prepare_create(
    rt: StoredKind, namespace: str, body: Obj, field_validation: str, decoded: Sequence[str]
) -> tuple[Obj, list[str]]:
    obj = copy.deepcopy(body)
    meta = obj.setdefault("metadata", {})
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    if rt.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    for system in RESET_ON_CREATE:
        meta.pop(system, None)
    warnings: list[str] = []
    _apply_field_validation(rt, rt.strategy, obj, field_validation, warnings, decoded)
    rt.strategy.normalize(obj)
    warnings += ownership.dedup_owner_references(meta)
    rt.strategy.prepare_for_create(obj)
    rt.strategy.default(obj)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generate_name(meta["generateName"])
    _validate(rt, rt.strategy, obj, None)
    warnings.extend(rt.strategy.warnings(obj, None))
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_timestamp()
    meta["generation"] = 1
    rt.strategy.derive(obj)
    return canonical(obj), warnings


def create(
    rt: StoredKind,
    namespace: str | None,
    body: Obj,
    *,
    dry_run: bool = False,
    field_validation: str = "Warn",
    decoded: Sequence[str] = (),
    on_prepared: Callable[[Obj | None, Obj], Obj] | None = None,
) -> WriteResult:
    ns = _ns(rt, namespace)
    ensure_namespace(rt, ns)
    generated = not body.get("metadata", {}).get("name")
    # generateName may collide: kube retries a few times before answering AlreadyExists.
    for _attempt in range(5 if generated else 1):
        obj, warnings = _prepare_create(rt, ns, body, field_validation, decoded)
        if on_prepared is not None:
            obj = on_prepared(None, obj)
        if dry_run:
            if _exists(rt, ns, obj["metadata"]["name"]):
                raise errors.already_exists(rt.plural, rt.group, obj["metadata"]["name"])
            # Nothing was stored, so no revision: kube leaves the field out.
            obj["metadata"].pop("resourceVersion", None)
            return WriteResult(obj, warnings, created=True)
        try:
            _commit(rt, ns, obj["metadata"]["name"], None, obj, None)
        except errors.ApiError as exc:
            if exc.reason == "AlreadyExists" and generated:
                continue
            raise
        return WriteResult(obj, warnings, created=True)
    # kube's NewGenerateNameConflict names the last name it generated.
    raise errors.ApiError(
        "AlreadyExists",
        f'{errors.gr(rt.plural, rt.group)} "{obj["metadata"]["name"]}" already exists, the '
        "server was not able to generate a unique name for the object",
        {"name": obj["metadata"]["name"], "group": rt.group, "kind": rt.plural},
        retry_after=1,
    )


def _exists(rt: StoredKind, ns: str, name: str) -> bool:
    return StoredObject.objects.filter(resource=rt.key, namespace=ns, name=name).exists()


def _prepare_update(
    rt: StoredKind,
    strategy: WriteStrategy,
    old: Obj,
    body: Obj,
    field_validation: str,
    decoded: Sequence[str] = (),
) -> tuple[Obj, list[str]]:
    new = copy.deepcopy(body)
    new["apiVersion"], new["kind"] = rt.api_version, rt.kind
    meta = new.setdefault("metadata", {})
    old_meta = old["metadata"]
    immutable = check_immutable(meta, old_meta)
    if immutable:
        raise errors.invalid(rt.kind, rt.group, old_meta["name"], immutable)
    for system in KEPT_ON_UPDATE:
        if system in old_meta:
            meta[system] = old_meta[system]
        else:
            meta.pop(system, None)
    warnings: list[str] = []
    # Every subresource decodes the whole body (kube's status scope shares the main one's
    # serializer), so fieldValidation judges it all; /status then keeps only the status.
    _apply_field_validation(rt, strategy, new, field_validation, warnings, decoded)
    if strategy.subresource == "":
        warnings += ownership.dedup_owner_references(meta)
    strategy.normalize(new)
    strategy.prepare_for_update(new, old)
    strategy.default(new)
    _validate(rt, strategy, new, old)
    warnings.extend(strategy.warnings(new, old))
    if spec_changed(new, old):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    strategy.derive(new)
    return canonical(new), warnings


def update(
    rt: StoredKind,
    namespace: str | None,
    name: str,
    body: Obj,
    *,
    subresource: str = "",
    dry_run: bool = False,
    field_validation: str = "Warn",
    decoded: Sequence[str] = (),
    on_prepared: Callable[[Obj | None, Obj], Obj] | None = None,
) -> WriteResult:
    """PUT: the body replaces the object; its metadata.resourceVersion must be current."""
    wanted = body.get("metadata", {}).get("resourceVersion")
    if not wanted:
        # kube's generic store names the resource here, not the kind: its qualifiedKind is
        # {group, resource} ("trainingruntimes.nodus.dev"), in the message and the details.
        raise errors.invalid(rt.plural, rt.group, name, [_rv_required()])
    uid = body.get("metadata", {}).get("uid")

    def replaced(old: Obj) -> Obj:
        # A body naming another object's uid is a failed precondition (kube: 409), checked
        # before anything else about it.
        if uid and uid != old["metadata"]["uid"]:
            raise errors.conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {old['metadata']['uid']}",
            )
        return body

    return mutate(
        rt,
        namespace,
        name,
        replaced,
        subresource=subresource,
        dry_run=dry_run,
        field_validation=field_validation,
        decoded=decoded,
        on_prepared=on_prepared,
    )


def _rv_required() -> Any:
    from runtimes.apimachinery.fielderrors import FieldError

    # kube renders the Go zero value unquoted (%#v of a uint64), not as the string "0x0".
    return FieldError(
        "metadata.resourceVersion",
        "FieldValueInvalid",
        "Invalid value: 0x0: must be specified for an update",
    )


def mutate(
    rt: StoredKind,
    namespace: str | None,
    name: str,
    change: Callable[[Obj], Obj],
    *,
    subresource: str = "",
    dry_run: bool = False,
    field_validation: str = "Warn",
    decoded: Sequence[str] = (),
    on_prepared: Callable[[Obj | None, Obj], Obj] | None = None,
) -> WriteResult:
    """Read, change, write with compare-and-swap: the heart of PUT and every kind of PATCH.

    `change` gets a copy of the current object and returns the requested one. If the request
    names a resourceVersion it must match; otherwise a concurrent write makes us re-read and
    re-apply (as kube's GuaranteedUpdate), so concurrent patches never lose an update.
    """
    ns = _ns(rt, namespace)
    strategy = rt.strategy
    if subresource == "status":
        if rt.status_strategy is None:
            raise errors.not_found(rt.plural, rt.group, name)
        strategy = rt.status_strategy

    def attempt() -> WriteResult:
        old = get(rt, ns, name)
        requested = change(copy.deepcopy(old))
        wanted = requested.get("metadata", {}).get("resourceVersion")
        if wanted and str(wanted) != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, name, errors.STALE)
        new, warnings = _prepare_update(rt, strategy, old, requested, field_validation, decoded)
        if on_prepared is not None:
            new = on_prepared(old, new)
        finalize = bool(old["metadata"].get("deletionTimestamp")) and not new["metadata"].get(
            "finalizers"
        )
        if unchanged(new, old) and not finalize:
            return WriteResult(old, warnings, changed=False)
        if dry_run:
            return WriteResult(new, warnings, deleted=finalize)
        _commit(
            rt,
            ns,
            name,
            int(old["metadata"]["resourceVersion"]),
            None if finalize else new,
            new if finalize else None,
        )
        return WriteResult(new, warnings, deleted=finalize)

    # A PUT's stale resourceVersion is refused by the check above on the next pass, while a
    # patch (whose result merely echoes the revision it was applied to) lands on the fresh
    # object.
    return _guaranteed(rt, name, attempt)


def delete(
    rt: StoredKind,
    namespace: str | None,
    name: str,
    *,
    uid: str | None = None,
    resource_version: str | None = None,
    dry_run: bool = False,
    propagation: str | None = None,
    orphan_dependents: bool | None = None,
) -> WriteResult:
    """Deletes now, or (with finalizers) marks the object as being deleted.

    `propagation` (Background, Foreground, Orphan) and the older `orphan_dependents` put the
    garbage collector's finalizer on the object, or take it off, as kube-apiserver does
    (`ownership.deletion_finalizers`): also on an object already being deleted, so a second
    DELETE may switch an orphaning deletion to a foreground one. An object left without
    finalizers goes at once.
    """
    ns = _ns(rt, namespace)

    def attempt() -> WriteResult:
        old = get(rt, ns, name)
        meta = old["metadata"]
        # kube checks a delete's preconditions early, in rest.BeforeDelete, naming the
        # object's Kind (not its resource) and saying what a mismatch likely means.
        if uid and uid != meta["uid"]:
            raise errors.conflict(
                rt.kind,
                rt.group,
                name,
                f"the UID in the precondition ({uid}) does not match the UID in record "
                f"({meta['uid']}). The object might have been deleted and then recreated",
            )
        if resource_version and resource_version != meta["resourceVersion"]:
            raise errors.conflict(
                rt.kind,
                rt.group,
                name,
                f"the ResourceVersion in the precondition ({resource_version}) does not match "
                f"the ResourceVersion in record ({meta['resourceVersion']}). The object might "
                "have been modified",
            )
        finalizers = list(meta.get("finalizers") or [])
        changed = ownership.deletion_finalizers(finalizers, propagation, orphan_dependents)
        if changed is not None:
            finalizers = changed
        if finalizers:
            if meta.get("deletionTimestamp") and changed is None:
                return WriteResult(old, changed=False)
            new = copy.deepcopy(old)
            new["metadata"]["finalizers"] = finalizers
            if not meta.get("deletionTimestamp"):
                new["metadata"]["deletionTimestamp"] = now_timestamp()
                new["metadata"]["generation"] = int(meta.get("generation", 1)) + 1
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if not dry_run:
                _commit(rt, ns, name, int(meta["resourceVersion"]), new, None)
            return WriteResult(new)
        if not dry_run:
            _commit(rt, ns, name, int(meta["resourceVersion"]), None, old)
        return WriteResult(old, deleted=True)

    return _guaranteed(rt, name, attempt)


# kube's GuaranteedUpdate re-reads and re-applies for as long as the request lives. Here a write
# that lost the race this many times in a row takes the write lock before it reads, so it cannot
# lose again: many writers on one object (a shared runtime's annotations) all land, each in
# bounded time, and the rest of the time no write holds the lock while it validates.
OPTIMISTIC_TRIES = 5


def _guaranteed(rt: StoredKind, name: str, attempt: Callable[[], WriteResult]) -> WriteResult:
    """Runs a read-change-commit `attempt` until its commit finds the row as it was read."""
    for _try in range(OPTIMISTIC_TRIES):
        try:
            return attempt()
        except _Stale:
            continue
    for tried in range(LOCK_RETRIES):
        try:
            with one_writer(), transaction.atomic():
                with connection.cursor() as cursor:
                    _lock_counter(cursor)
                return attempt()
        except _Stale:
            # Under the lock only a write that bypassed the counter could move the row.
            raise errors.conflict(rt.plural, rt.group, name, errors.STALE) from None
        except OperationalError as error:
            if not _locked(error):
                raise
            time.sleep(0.02 * 2**tried)
    raise _busy()


# SQLite lets one writer in at a time, and a writer that finds the lock taken sleeps in SQLite's
# busy handler (1, 2, 5, 10, 15, 20, 25 ms ...) before it looks again: sixteen writers of one
# process spent most of their time asleep while the lock was free. They queue on this lock
# instead, each handed it the moment the last one commits; another process's writers still meet
# the busy timeout. Re-entrant: the write-locked attempt above holds it across its commit.
# PostgreSQL queues the waiters for a row lock itself.
_sqlite_writers = threading.RLock()


def one_writer() -> contextlib.AbstractContextManager[object]:
    """Held around a write transaction: this process's writers take turns (on SQLite)."""
    if connection.vendor == "sqlite":
        return _sqlite_writers
    return contextlib.nullcontext()


def _lock_counter(cursor: Any) -> int:
    """The store's revision, its row held till the transaction ends: every commit takes it
    first, so holding it is holding the store's write lock."""
    counter = RevisionCounter._meta.db_table
    cursor.execute(f"SELECT value FROM {counter} WHERE id = 1{_for_update()}")  # noqa: S608
    (current,) = cursor.fetchone()
    return int(current)


def _tables() -> tuple[str, str, str]:
    from runtimes.storage.models import Event

    return (
        StoredObject._meta.db_table,
        Event._meta.db_table,
        RevisionCounter._meta.db_table,
    )


def _for_update() -> str:
    """Locks the counter row where the database can (PostgreSQL); SQLite's IMMEDIATE
    transactions already hold the write lock."""
    return " FOR UPDATE" if connection.features.has_select_for_update else ""


# A write that meets a lock (SQLite's "database table is locked" or "database is locked" past
# its busy timeout, PostgreSQL's lock_timeout) is tried again, its transaction rolled back each
# time; still locked, it is answered 503 with Retry-After, never a 500.
LOCK_RETRIES = 6


def _locked(error: OperationalError) -> bool:
    """SQLite's "database is locked" / "database table is locked", or PostgreSQL's
    lock_not_available (55P03: a lock_timeout ran out)."""
    return "locked" in str(error) or getattr(error.__cause__, "sqlstate", None) == "55P03"


def _commit(
    rt: StoredKind,
    ns: str,
    name: str,
    expected: int | None,
    new: Obj | None,
    gone: Obj | None,
) -> int:
    """`_commit_once`, again while the database says it is locked (then 503)."""
    for attempt in range(LOCK_RETRIES):
        try:
            return _commit_once(rt, ns, name, expected, new, gone)
        except OperationalError as error:
            if not _locked(error):
                raise
            time.sleep(0.02 * 2**attempt)
    raise _busy()


def _busy() -> errors.ApiError:
    return errors.ApiError(
        "ServiceUnavailable",
        "the database is busy: the write was not made; try again",
        retry_after=1,
        fix="Retry the request after a second; nothing was written.",
    )


def _commit_once(
    rt: StoredKind,
    ns: str,
    name: str,
    expected: int | None,
    new: Obj | None,
    gone: Obj | None,
) -> int:
    """Writes one change and its event in one transaction; returns the new revision.

    `expected` is the revision we read (None for a create); `new` the object to store, or None
    with `gone` the last state when the object goes away. The counter row lock serialises
    writers, so revisions commit in the order they are handed out and a reader never sees
    revision N+1 without N.
    """
    # Plain SQL, the same five statements the ORM would send: a write is on every request's
    # critical path, and building the ORM's queries cost more than running them.
    objects, log, counter = _tables()
    with one_writer(), transaction.atomic(), connection.cursor() as cursor:
        current = _lock_counter(cursor)
        cursor.execute(
            f"SELECT id, revision, body FROM {objects} "  # noqa: S608
            "WHERE resource = %s AND namespace = %s AND name = %s",
            [rt.key, ns, name],
        )
        row = cursor.fetchone()
        if expected is None and row is not None:
            raise errors.already_exists(rt.plural, rt.group, name)
        if expected is not None and (row is None or int(row[1]) != expected):
            raise _Stale
        revision = current + 1
        cursor.execute(f"UPDATE {counter} SET value = %s WHERE id = 1", [revision])  # noqa: S608
        prev_body = row[2] if row is not None else ""
        if new is not None:
            new["metadata"]["resourceVersion"] = str(revision)
            body = dumps(new)
            if row is None:
                cursor.execute(
                    f"INSERT INTO {objects} (resource, namespace, name, uid, revision, body) "  # noqa: S608
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [rt.key, ns, name, new["metadata"]["uid"], revision, body],
                )
                kind = "ADDED"
            else:
                cursor.execute(
                    f"UPDATE {objects} SET revision = %s, body = %s WHERE id = %s",  # noqa: S608
                    [revision, body, row[0]],
                )
                kind = "MODIFIED"
        else:
            assert gone is not None
            assert row is not None
            gone["metadata"]["resourceVersion"] = str(revision)
            body = dumps(gone)
            cursor.execute(f"DELETE FROM {objects} WHERE id = %s", [row[0]])  # noqa: S608
            kind = "DELETED"
        writer = actor.current()
        cursor.execute(
            f"INSERT INTO {log} (revision, resource, namespace, name, type, body, prev_body, "  # noqa: S608
            "created_at, actor) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                revision,
                rt.key,
                ns,
                name,
                kind,
                body,
                prev_body,
                connection.ops.adapt_datetimefield_value(timezone.now()),
                writer.username,
            ],
        )
        logged = (revision, rt.key, ns, name, kind, body, prev_body)
        transaction.on_commit(lambda: events.committed(logged))
        listener = writer.on_write
        if listener is not None:
            version = rt.api_version.rpartition("/")[2]
            transaction.on_commit(lambda: listener(kind, rt.plural, rt.group, version, ns, name))
    return revision
