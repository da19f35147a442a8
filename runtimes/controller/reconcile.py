"""One reconcile of one TrainingRuntime: inspect its image, write what that says into status."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runtimes.accounts.access import MANAGED_PROJECT
from runtimes.accounts.serviceaccounts import ServiceAccount
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.objectmeta import now_timestamp
from runtimes.controller.inspection import inspect
from runtimes.controller.oci.errors import ImageError, Transient
from runtimes.controller.oci.reference import parse_reference
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.recorder import NORMAL, WARNING, EventRecorder
from runtimes.controller.signing.cosign import TrustedKey
from runtimes.registry import authorization, fieldmanager
from runtimes.registry.kinds import lookup
from runtimes.registry.resources import ResourceType
from runtimes.storage import store

# The verdict of an inspection becomes the ``Verified`` condition (metav1.Condition) and the
# phase: True → Ready (reason ``SignatureVerified`` for managed runtimes, whose signature is
# required; ``DigestResolved`` for the others), False → Failed with the typed error's name as
# reason, Unknown → Pending while the registry is away (``Transient``: retried with backoff, never
# Failed). Writes go through the status subresource only, and only when something changed;
# ``lastTransitionTime`` moves only when the condition's status does. Each write is made as the
# controller's service account (``accounts.serviceaccounts``) and checked as the API checks a
# client's PATCH of ``/status`` (``registry.authorization.check``): a revoked token or a
# deactivated account stops the controller's writes as it would any client's.
#
# Each new verdict, and each retry while the registry is away, is also recorded as a core/v1
# Event about the runtime (``runtimes.controller.recorder``): Normal for a verified image,
# Warning for a failed or unreachable one, with the verdict's reason and message, so
# ``kubectl describe tr`` shows why the phase is what it is.
#
# The key fingerprint of a verified signature lives in the Verified condition's message
# (``... signed by trusted key sha256:<hex>``): the contract's status has no field for it.

log = logging.getLogger("nodus.controller")

VERIFIED = "Verified"
SIGNATURE_VERIFIED = "SignatureVerified"
DIGEST_RESOLVED = "DigestResolved"
RECONCILE_ERROR = "ReconcileError"
PHASE_FOR = {"True": "Ready", "False": "Failed", "Unknown": "Pending"}
MAX_MESSAGE = 4096
KIND = "trainingruntimes"
# What a status write asks of its writer: the same declaration as the API's PATCH of /status.
WRITE_STATUS = authorization.role("patch", subresource="status")


@dataclass(frozen=True)
class Verdict:
    """What inspecting one image said: final (True/False) or transient (Unknown)."""

    status: str  # "True" | "False" | "Unknown", as the condition's status
    reason: str
    message: str
    digest: str | None = None
    user: str | None = None
    key_fingerprint: str | None = None
    retry_after: float | None = None

    @property
    def transient(self) -> bool:
        return self.status == "Unknown"


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict | None  # None when the runtime is gone
    written: bool = False
    stale: bool = False  # the object moved while we inspected; its own event requeues it

    @property
    def transient(self) -> bool:
        return self.verdict is not None and self.verdict.transient


def runtime_type() -> ResourceType:
    rt = lookup(KIND)
    assert rt is not None, "the TrainingRuntime kind is not registered"
    return rt


def is_managed(obj: Obj) -> bool:
    return obj.get("metadata", {}).get("namespace") == MANAGED_PROJECT


def judge(obj: Obj, sources: ImageSources, trusted_keys: Sequence[TrustedKey]) -> Verdict:
    """Inspects the runtime's image; every failure becomes a verdict, never an exception."""
    image = (obj.get("spec") or {}).get("image") or ""
    managed = is_managed(obj)
    try:
        ref = parse_reference(image, require_digest=True)
        found = inspect(sources.for_reference(ref), ref, trusted_keys, require_signature=managed)
    except Transient as exc:
        return Verdict("Unknown", exc.reason, f"{exc}; will retry", retry_after=exc.retry_after)
    except ImageError as exc:
        return Verdict("False", exc.reason, _clip(str(exc)))
    except OSError as exc:  # the layout's disk, say: worth another try, not a verdict
        return Verdict("Unknown", RECONCILE_ERROR, _clip(f"reading the image failed: {exc}"))
    signed = f"signed by trusted key sha256:{found.key_fingerprint}"
    if managed:
        message = f"image {found.digest} is {signed}"
        return Verdict(
            "True", SIGNATURE_VERIFIED, message, found.digest, found.user, found.key_fingerprint
        )
    # Outside the managed catalog a signature is not required, so the reason stays
    # DigestResolved; a signature that does verify is still worth saying.
    message = f"image digest {found.digest} resolved; config user {found.user}"
    if found.verified:
        message += f"; {signed}"
    return Verdict(
        "True", DIGEST_RESOLVED, message, found.digest, found.user, found.key_fingerprint
    )


def desired_status(obj: Obj, verdict: Verdict, now: str) -> Obj:
    """The status ``verdict`` calls for, starting from the object's current status."""
    old = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(old, dict)
    generation = obj["metadata"].get("generation")
    if (
        verdict.transient
        and old.get("observedGeneration") == generation
        and old.get("phase") in ("Ready", "Failed")
    ):
        # The registry being away says nothing new about an image already judged at this
        # generation: keep the verdict, retry later.
        return copy.deepcopy(old)
    conditions = [c for c in old.get("conditions") or [] if isinstance(c, dict)]
    previous = next((c for c in conditions if c.get("type") == VERIFIED), None)
    changed = previous is None or previous.get("status") != verdict.status
    condition = {
        "type": VERIFIED,
        "status": verdict.status,
        "reason": verdict.reason,
        "message": verdict.message,
        "observedGeneration": generation,
        "lastTransitionTime": (
            (previous or {}).get("lastTransitionTime") or now if not changed else now
        ),
    }
    if previous is None:
        conditions.append(condition)
    else:
        conditions = [condition if c is previous else c for c in conditions]
    status = copy.deepcopy(old)
    status.update(
        phase=PHASE_FOR[verdict.status], observedGeneration=generation, conditions=conditions
    )
    if verdict.status == "True":
        status["imageDigest"], status["imageUser"] = verdict.digest, verdict.user
    else:
        # imageDigest is "the verified digest": nothing is verified now.
        status.pop("imageDigest", None)
        status.pop("imageUser", None)
    return status


def identity(obj: Obj) -> tuple[str, int, str]:
    """What a verdict depends on: uid, generation and image. A change that leaves it alone
    (status, labels) needs no new inspection."""
    meta = obj.get("metadata", {})
    image = (obj.get("spec") or {}).get("image")
    return str(meta.get("uid", "")), int(meta.get("generation", 0)), str(image or "")


def _clip(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


class Reconciler:
    """Reconciles runtimes by key, remembering the last final verdict per (uid, generation).

    The memory spares a registry round trip when the event is our own status write; a resync
    asks for ``fresh`` verdicts, so a signature or image removed later is still noticed.
    """

    def __init__(
        self,
        sources: ImageSources,
        trusted_keys: Callable[[], Sequence[TrustedKey]],
        clock: Callable[[], str] = now_timestamp,
        account: ServiceAccount | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.sources = sources
        self.trusted_keys = trusted_keys
        self.clock = clock
        self.account = account or ServiceAccount()
        self.recorder = recorder or EventRecorder(self.account)
        self._verdicts: dict[tuple[str, str], tuple[tuple[str, int, str], Verdict]] = {}

    def forget(self, namespace: str, name: str) -> None:
        self._verdicts.pop((namespace, name), None)

    def forget_all(self) -> None:
        self._verdicts.clear()

    def reconcile(self, namespace: str, name: str, *, fresh: bool = False) -> Outcome:
        rt = runtime_type()
        key = (namespace, name)
        try:
            obj = store.get(rt, namespace, name)
        except errors.ApiError as exc:
            if exc.reason != "NotFound":
                raise
            self.forget(namespace, name)
            return Outcome(None)
        inspected = identity(obj)
        cached = self._verdicts.get(key)
        if not fresh and cached is not None and cached[0] == inspected:
            verdict = cached[1]
        else:
            verdict = judge(obj, self.sources, self.trusted_keys())
            if verdict.transient:
                self._verdicts.pop(key, None)
            else:
                self._verdicts[key] = (inspected, verdict)
        outcome = self.write_status(rt, obj, inspected, verdict)
        if outcome.verdict is not None and (outcome.written or verdict.transient):
            # A new verdict is news; a registry still away is news each retry, counted up on
            # one Event (count, series) rather than written again.
            event_type = NORMAL if verdict.status == "True" else WARNING
            self.recorder.record(obj, event_type, verdict.reason, verdict.message)
        return outcome

    def write_status(
        self, rt: ResourceType, obj: Obj, inspected: tuple[str, int, str], verdict: Verdict
    ) -> Outcome:
        meta = obj["metadata"]
        if desired_status(obj, verdict, self.clock()) == obj.get("status"):
            return Outcome(verdict)
        stale = False

        def change(current: Obj) -> Obj:
            nonlocal stale
            stale = identity(current) != inspected
            if not stale:
                current["status"] = desired_status(current, verdict, self.clock())
            return current

        authorization.check(
            self.account.user(), WRITE_STATUS, "PATCH", meta["namespace"], meta["name"], rt
        )
        try:
            result = store.mutate(
                rt,
                meta["namespace"],
                meta["name"],
                change,
                subresource="status",
                on_prepared=fieldmanager.recorder(rt, fieldmanager.CONTROLLER, "status"),
            )
        except errors.ApiError as exc:
            if exc.reason != "NotFound":
                raise
            self.forget(meta["namespace"], meta["name"])
            return Outcome(None)
        if result.changed:
            log.info(
                "%s/%s generation %s: %s %s",
                meta["namespace"],
                meta["name"],
                inspected[1],
                PHASE_FOR[verdict.status],
                verdict.reason,
            )
        return Outcome(verdict, written=result.changed, stale=stale)
