"""Continue tokens, shaped as kube-apiserver's: base64url(JSON{v, rv, start}).

The token carries the snapshot revision of the first page and the key to start after, so every
page is read as of the same revision. `rv = -1` marks the "inconsistent" token handed out with
a 410: it continues from the key at whatever is current.
"""

from __future__ import annotations

import base64
import binascii

import orjson

from runtimes.apimachinery import errors

VERSION = "meta.k8s.io/v1"
INCONSISTENT = -1
Key = tuple[str, str]


def encode(revision: int, after: Key) -> str:
    # kube's start key is "the next key after the last one served": the key plus "\x00".
    start = f"{after[0]}/{after[1]}\x00"
    data = orjson.dumps({"v": VERSION, "rv": revision, "start": start})
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _invalid(detail: str) -> errors.ApiError:
    return errors.bad_request(
        f"invalid continue token: {detail}",
        fix="Pass metadata.continue from the previous page unchanged, or list again without "
        "continue.",
    )


def decode(token: str) -> tuple[int, Key]:
    """(revision, key to start after); malformed tokens are a 400."""
    try:
        data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        value = orjson.loads(data)
    except (binascii.Error, ValueError) as exc:
        raise _invalid(f"continue key is not valid: {exc}") from None
    if not isinstance(value, dict):
        raise _invalid("continue key is not valid")
    if value.get("v") != VERSION:
        raise _invalid(f"got unrecognized encoded version {value.get('v')}")
    revision, start = value.get("rv"), value.get("start")
    if not isinstance(revision, int) or isinstance(revision, bool) or revision == 0:
        raise _invalid("continue key is not valid: incorrect encoded start resourceVersion")
    if revision < INCONSISTENT:
        raise _invalid("continue key is not valid: incorrect encoded start resourceVersion")
    if not isinstance(start, str) or not start:
        raise _invalid("continue key is not valid: encoded start key empty")
    namespace, slash, name = start.rstrip("\x00").partition("/")
    if not slash or not name:
        raise _invalid("continue key is not valid: invalid start key")
    return revision, (namespace, name)
