"""Why a runtime or a job is stuck, in words a person can act on.

The controller writes conditions (type, status, reason, message); a runtime that is not Ready
and a job that did not compile show the failing ones with what to do next. The fix for each
reason is said here, beside the reason's name, because the console may not import the
controller (the faces are independent) and the conditions carry no fix of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtimes.apimachinery.meta import Obj

# Runtime conditions: the controller's image verdicts (class names of its image errors).
RUNTIME_FIXES = {
    "RegistryRefused": "Push the image to a registry on the platform's allow-list (or ask a "
    "platform admin to add this one), then edit spec.image.",
    "ImageNotFound": "Push the image, or correct spec.image's repository, tag or digest.",
    "InvalidImageReference": "Correct spec.image: registry/repository:tag or @sha256:<digest>.",
    "DigestMismatch": "Re-push the image and set spec.image to the digest the registry serves.",
    "RegistryUnauthorized": "Make the repository readable to the controller (public, or with "
    "pull credentials a platform admin sets up).",
    "ManifestInvalid": "Build the image for linux/amd64 with a standard OCI or Docker manifest.",
    "ContentTooLarge": "Shrink the image's manifest or config, or its signature payload.",
    "SignatureMissing": "Sign the image digest with cosign and a key the platform trusts: "
    "managed runtimes run only signed images.",
    "SignatureInvalid": "Sign the image digest again with a key the platform trusts.",
    "RegistryUnavailable": "Nothing to change: the controller retries until the registry answers.",
}
# Job conditions: what the job controller says when a job does not compile.
JOB_FIXES = {
    "CompileFailed": "Change the fields the message names (open the runtime's Parameters tab to "
    "check a job before creating it), then recompile.",
    "RuntimeNotReady": "Wait for the runtime to turn Ready, or fix what its Overview says; the "
    "job compiles once it is.",
    "RuntimeMissing": "Point spec.runtimeRef at a runtime that exists, or publish it again.",
}
GENERIC_FIX = "Edit the resource to fix what the message says; the controller checks again."
# A job's conditions that are bad when False (RuntimeChanged False is the good state).
_JOB_TYPES = ("RuntimeReady", "Compiled")


@dataclass(frozen=True)
class Problem:
    type: str
    reason: str
    message: str
    fix: str


def _conditions(obj: Obj) -> list[Obj]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in found or [] if isinstance(c, dict)]


def runtime_problems(obj: Obj) -> list[Problem]:
    """The conditions that keep a runtime from Ready, each with its fix (none when Ready)."""
    phase = (obj.get("status") or {}).get("phase")
    if phase == "Ready":
        return []
    return [
        Problem(
            str(c.get("type", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
            RUNTIME_FIXES.get(str(c.get("reason", "")), GENERIC_FIX),
        )
        for c in _conditions(obj)
        if c.get("status") == "False"
    ]


def job_problems(obj: Obj) -> list[Problem]:
    """The conditions that keep a job from compiling, each with its fix."""
    return [
        Problem(
            str(c.get("type", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
            JOB_FIXES.get(str(c.get("reason", "")), GENERIC_FIX),
        )
        for c in _conditions(obj)
        if c.get("type") in _JOB_TYPES and c.get("status") == "False"
    ]
