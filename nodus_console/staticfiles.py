"""Static files: hashed names, compressed copies and long cache lifetimes, through WhiteNoise.

`collect` runs `collectstatic` into STATIC_ROOT (`manage.py serve` calls it before it serves),
where `StaticStorage` writes each file under a name that carries a hash of its content, plus a
gzip copy. Pages then link the hashed names, which WhiteNoise serves with
``Cache-Control: max-age=<a year>, public, immutable`` and gzip to clients that accept it: a
changed file gets a new name, so a year's cache is never stale. Collecting again is skipped
while the sources are unchanged, so a second start costs nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.http import HttpRequest, HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage

# Nothing collected yet (tests in-process, management commands, `DEBUG`), pages link the source
# names, which WhiteNoise serves from the finders (WHITENOISE_USE_FINDERS) with a short max-age.
#
# WhiteNoise's middleware is sync only. Django adapts a sync middleware by running it, and every
# middleware above it, on a thread: each request paid for thread hops there and back, even API
# requests that never touch a static file. `AsyncWhiteNoiseMiddleware` is async capable: a
# request for a static file is served as WhiteNoise serves it (its file is opened on a thread);
# any other request goes straight on to the next middleware, on the event loop.

# What the last collect was made from, kept beside its output.
SOURCES_STAMP = ".sources"
ONE_YEAR = 365 * 24 * 3600


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed names (and gzip copies) once collected; the source names before."""

    def stored_name(self, name: str) -> str:
        if not self.hashed_files:
            return name
        return str(super().stored_name(name))


def sources_fingerprint() -> str:
    """A digest of every file the finders would collect: its name, size and modification time,
    and the storage that collects them."""
    digest = hashlib.sha256(settings.STORAGES["staticfiles"]["BACKEND"].encode())
    entries = []
    for finder in finders.get_finders():
        for path, storage in finder.list([]):
            stat = Path(storage.path(path)).stat()
            prefix = getattr(storage, "prefix", None) or ""
            entries.append(f"{prefix}/{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    for entry in sorted(entries):
        digest.update(entry.encode() + b"\n")
    return digest.hexdigest()


def collect() -> bool:
    """Collects the static files into STATIC_ROOT unless it holds a collect of the same sources
    already; whether it collected."""
    root = Path(settings.STATIC_ROOT)
    stamp = root / SOURCES_STAMP
    fingerprint = sources_fingerprint()
    manifest = root / StaticStorage.manifest_name
    if manifest.exists() and stamp.exists() and stamp.read_text() == fingerprint:
        return False
    root.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    # --clear: files of an older collect (other hashes) go; the folder is ours alone.
    call_command("collectstatic", interactive=False, clear=True, verbosity=0)
    stamp.write_text(fingerprint)
    return True


class AsyncWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True
    # Hashed names are cached for a year (WhiteNoise's default is ten), marked immutable.
    FOREVER = ONE_YEAR

    def __init__(self, get_response: Any = None) -> None:
        super().__init__(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            response: HttpResponseBase = await sync_to_async(self.serve)(static_file, request)
            return response
        result: HttpResponseBase = await self.get_response(request)
        return result
