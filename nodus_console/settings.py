"""Settings, all from the environment.

The embedded default needs nothing set: SQLite in ``$NODUS_DATA_DIR`` (default ``./.data``), an
in-memory channel layer and the in-process controller. Scale-out sets ``DATABASE_URL``
(PostgreSQL) and ``REDIS_URL`` (channels-redis) and runs the controller as its own command.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from csp.constants import NONE, SELF

from runtimes.accounts.privatefiles import private_database, private_dir, tighten, write_private

BASE_DIR = Path(__file__).resolve().parent.parent
# The data dir holds the database and the keys: 0700, and its secrets 0600 (privatefiles).
DATA_DIR = private_dir(Path(os.environ.get("NODUS_DATA_DIR", BASE_DIR / ".data")).resolve())


def _flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").lower() in {"1", "true", "yes", "on"}


def _secret_key() -> str:
    if key := os.environ.get("DJANGO_SECRET_KEY"):
        return key
    # Generated once and kept beside the data, so sessions and tokens survive restarts.
    path = DATA_DIR / "secret-key"
    if not path.exists():
        write_private(path, secrets.token_urlsafe(50).encode())
    tighten(path)
    return path.read_text().strip()


def _database(url: str) -> dict[str, object]:
    parts = urlsplit(url)
    options: dict[str, Any] = dict(parse_qsl(parts.query))
    if parts.scheme == "sqlite":
        # sqlite:////abs/path is absolute, sqlite:///rel/path is relative (as dj-database-url).
        rest = url[len("sqlite://") :].split("?", 1)[0]
        name = rest[1:] if rest.startswith("/") else rest
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name or str(DATA_DIR / "nodus.sqlite3"),
            # Kept open by the threads that serve API views (runtimes.api.viewpool).
            "CONN_MAX_AGE": int(options.pop("conn_max_age", "300")),
            # IMMEDIATE: a writer takes the lock up front, so two writers never deadlock on
            # upgrading a read lock; WAL lets readers (watch, list) proceed beside a writer.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    if parts.scheme in {"postgres", "postgresql"}:
        conn_max_age = int(options.pop("conn_max_age", "0"))
        test_name = options.pop("test_name", None)
        pool_size = int(options.pop("pool_max_size", "16"))
        if conn_max_age == 0 and pool_size > 0:
            # Daphne runs each request on a thread; opening a connection per request costs
            # milliseconds and, under load, "too many clients". psycopg's pool (Django >= 5.1)
            # keeps a few open. `?pool_max_size=0` turns it off; persistent connections
            # (`?conn_max_age=N`) and the pool exclude each other.
            options["pool"] = {"min_size": 2, "max_size": pool_size, "timeout": 30}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")) or "postgres",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": conn_max_age,
            "OPTIONS": options,
            "TEST": {"NAME": test_name},
        }
    raise ValueError(
        f"DATABASE_URL: unsupported scheme {parts.scheme!r} (use sqlite:// or postgres://)"
    )


SECRET_KEY = _secret_key()
DEBUG = _flag("DEBUG")
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "*").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "channels",
    "django_htmx",
    "django_filters",
    "axes",
    "runtimes",
]

# Django's own middleware runs its hooks on a thread per request when served async; for API
# paths the wrappers in nodus_console.middleware run them on the event loop instead (they only
# read and write headers and cookies), so an API request never waits for a thread it doesn't
# need. Console pages get them exactly as Django runs them.
MIDDLEWARE = [
    # First: every later step sees an API path without trailing slashes, as kube's handlers.
    "runtimes.api.requestinfo.TrimmedPath",
    "runtimes.api.requestid.RequestIdMiddleware",
    "nodus_console.middleware.Security",
    "nodus_console.middleware.ContentSecurityPolicy",
    # Above the session and CSRF middleware, so it sees the cookies they set on the way out.
    "runtimes.accounts.cookies.SecureCookiesMiddleware",
    "nodus_console.staticfiles.AsyncWhiteNoiseMiddleware",
    # Below WhiteNoise (static files come compressed already), above anything that writes a body.
    "nodus_console.middleware.Compression",
    "nodus_console.middleware.Sessions",
    "nodus_console.middleware.Common",
    "nodus_console.middleware.Csrf",
    "nodus_console.middleware.Authentication",
    "nodus_console.middleware.Messages",
    "nodus_console.middleware.FrameOptions",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]
# The admin looks for Django's session, auth and messages middleware by class; the wrappers
# above run exactly those, so its checks are answered.
SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410"]

ROOT_URLCONF = "nodus_console.urls"
ASGI_APPLICATION = "nodus_console.asgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "runtimes.console.context.console",
            ],
        },
    },
]

DATABASES = {
    "default": _database(os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'nodus.sqlite3'}"))
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Created 0600 before SQLite opens it; SQLite gives its -wal and -shm the same mode.
    _sqlite_file = Path(str(DATABASES["default"]["NAME"]))
    if _sqlite_file.parent.is_dir():
        private_database(_sqlite_file)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def channel_layers(redis_url: str) -> dict[str, Any]:
    """Redis when given (scale-out), else in memory (one process).

    channels-redis blocks up to 5 s in BZPOPMIN for each receive, and redis-py 8 gives up on a
    read after 5 s by default: every quiet 5 s the workers' nudge receivers failed, dropped
    their connection and slept, so another worker's write reached their watches only on the
    hub's next poll. Reads may take 15 s here (a dead Redis is still noticed), connects 5 s.
    """
    if not redis_url:
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    host = {"address": redis_url, "socket_timeout": 15, "socket_connect_timeout": 5}
    return {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [host]}}
    }


REDIS_URL = os.environ.get("REDIS_URL", "")
CHANNEL_LAYERS = channel_layers(REDIS_URL)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
# Our files, and what `npm run build` bundles from npm packages (frontend/ -> build/static/).
STATICFILES_DIRS = [
    BASE_DIR / "static",
    *[p for p in [BASE_DIR / "build" / "static"] if p.is_dir()],
]
# `manage.py serve` collects into it (nodus_console.staticfiles.collect): hashed names, gzip
# copies, a year's immutable caching. NODUS_STATIC_ROOT lets servers share one collect (tests).
STATIC_ROOT = Path(os.environ.get("NODUS_STATIC_ROOT", DATA_DIR / "static")).resolve()
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "nodus_console.staticfiles.StaticStorage"},
}
# Until something is collected, pages link the source names, served from the finders.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LOGIN_URL = "/login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login"
# Secure defaults (README, "Secure defaults"). The same app answers plain HTTP (the console on
# loopback) and HTTPS, so what only makes sense over TLS is decided per request: HSTS
# (SecurityMiddleware sends it only when request.is_secure()) and the Secure flag on cookies
# (runtimes.accounts.cookies), instead of SESSION_COOKIE_SECURE, which would lock the HTTP
# console out of its own session.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# The console sends the token from the page (hx-headers), never from script reading the cookie.
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
# Django's 403 page, with the reason put on the request's access line.
CSRF_FAILURE_VIEW = "runtimes.console.views.csrf_failure"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_HSTS_SECONDS = int(os.environ.get("NODUS_HSTS_SECONDS", 365 * 24 * 3600))
# No script or style comes from anywhere but our static files: no inline <script>, no on*=
# handlers, no style attributes (static/console/*.js and console.css hold them). 'self' in
# connect-src also covers the console's websocket on the same host and port (ws: and wss:).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# kube-apiserver's default --max-request-bytes is 3 MiB; bodies above it answer 413.
NODUS_MAX_BODY_BYTES = int(os.environ.get("NODUS_MAX_BODY_BYTES", 3 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = NODUS_MAX_BODY_BYTES

# How many revisions the event log keeps before compaction (older ones answer 410 Expired).
NODUS_EVENT_WINDOW = int(os.environ.get("NODUS_EVENT_WINDOW", 100_000))
# Recent events each process keeps in memory for watchers; one that falls further behind is
# closed with 410 and resumes from the log.
NODUS_HUB_RING = int(os.environ.get("NODUS_HUB_RING", 4096))
# Lists are answered from each process's watch cache (runtimes.watch.cache), kept current by
# the hub; off, every list reads SQL.
NODUS_WATCH_CACHE = _flag("NODUS_WATCH_CACHE", default=True)
# With the cache on, the reads memory can answer are served on the event loop
# (runtimes.api.loopreads); lists larger than NODUS_LIST_STREAM_BYTES stream item by item.
NODUS_LOOP_READS = _flag("NODUS_LOOP_READS", default=True)
NODUS_LIST_STREAM_BYTES = int(os.environ.get("NODUS_LIST_STREAM_BYTES", 256 * 1024))
NODUS_WATCH_BOOKMARK_SECONDS = float(os.environ.get("NODUS_WATCH_BOOKMARK_SECONDS", 60))
# A watch without timeoutSeconds ends at a random point in this range (kube: 30 to 60 minutes).
NODUS_WATCH_TIMEOUT_RANGE = tuple(
    int(v) for v in os.environ.get("NODUS_WATCH_TIMEOUT_RANGE", "1800,3600").split(",")
)
NODUS_ADMIN_USER = os.environ.get("NODUS_ADMIN_USER", "admin")
NODUS_PUBLIC_URL = os.environ.get("NODUS_PUBLIC_URL", "")
# The in-process controller runs beside the web server unless this is off (scale-out runs
# `manage.py runcontroller` instead).
NODUS_EMBEDDED_CONTROLLER = _flag("NODUS_EMBEDDED_CONTROLLER", default=True)
# The controller's service account token (scale-out: `manage.py createtoken --user
# system:serviceaccount:nodus:controller`); unset, the controller keeps one in DATA_DIR.
NODUS_CONTROLLER_TOKEN = os.environ.get("NODUS_CONTROLLER_TOKEN", "")

# Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT failed sign-ins for one username from
# one address, the console's and /admin's sign-in answer 429 with the lockout page until the
# cool-off has passed since the last failure; a successful sign-in resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("NODUS_LOGIN_FAILURE_LIMIT", 5))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("NODUS_LOGIN_COOLOFF_MINUTES", 15)))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Trying again while locked out does not push the end of the lockout further away.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "runtimes.console.signin.locked_out"
# Failed bearer tokens per client address (runtimes.accounts.throttling): past the limit within
# the window, 429 TooManyRequests with Retry-After.
NODUS_TOKEN_FAILURE_LIMIT = int(os.environ.get("NODUS_TOKEN_FAILURE_LIMIT", 20))
NODUS_TOKEN_FAILURE_WINDOW = float(os.environ.get("NODUS_TOKEN_FAILURE_WINDOW", 60))
# Open watches and websockets check their caller again after any access change (at most this long
# after it, runtimes.watch.guard) and, whatever happened, every NODUS_STREAM_RECHECK_SECONDS.
# A token's user and a caller's role, once found, are reused while access is unchanged and for
# at most this long (runtimes.accounts.memo); 0 looks them up on every request.
NODUS_ACCESS_CACHE_SECONDS = float(os.environ.get("NODUS_ACCESS_CACHE_SECONDS", 2.0))
# When a token was last used is written at most once a minute per token, by a thread every this
# many seconds (runtimes.accounts.tokens), never by the request; 0 writes it in the request.
NODUS_TOKEN_TOUCH_SECONDS = float(os.environ.get("NODUS_TOKEN_TOUCH_SECONDS", 10.0))
NODUS_STREAM_POLL_SECONDS = float(os.environ.get("NODUS_STREAM_POLL_SECONDS", 1.0))
NODUS_STREAM_RECHECK_SECONDS = float(os.environ.get("NODUS_STREAM_RECHECK_SECONDS", 30))
# Every process reads the stored access epoch this often (one read per process, not per stream),
# so an access change made by any process, a CLI included, reaches its streams without Redis
# (runtimes.accounts.revocation).
NODUS_REVOCATION_POLL_SECONDS = float(os.environ.get("NODUS_REVOCATION_POLL_SECONDS", 1.0))
# `serve --workers N` replaces a dead worker at once, and one that keeps dying after waits
# doubling from 0.5 s up to this long (runtimes.api.supervisor).
NODUS_WORKER_BACKOFF_MAX_SECONDS = float(os.environ.get("NODUS_WORKER_BACKOFF_MAX_SECONDS", 30))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "runtimes.api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["runtimes.api.media.KubeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["runtimes.api.media.KubeJSONParser"],
    "EXCEPTION_HANDLER": "runtimes.api.exceptions.handle",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "runtimes.api.media.KubeNegotiation",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "nodus": {
            "handlers": ["console"],
            "level": os.environ.get("NODUS_LOG_LEVEL", "INFO"),
            "propagate": False,
        },
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # A CSRF refusal is told once, by the access line (with its reason), not twice.
        "django.security.csrf": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}

# The verification controller (read by runtimes.controller.settings). Registries off the
# allow-list are never contacted; images under registry.nodus.dev come from the local image
# layout that `manage.py seed` fills. Trusted keys default to the key pair the seed generates.
NODUS_REGISTRY_ALLOW = os.environ.get("NODUS_REGISTRY_ALLOW", "")
NODUS_REGISTRY_CREDENTIALS = os.environ.get("NODUS_REGISTRY_CREDENTIALS", "")
# Seconds one registry request may take (connect and each read); past it, a transient error
# that the controller retries with backoff.
NODUS_REGISTRY_TIMEOUT = float(os.environ.get("NODUS_REGISTRY_TIMEOUT", 10))
NODUS_TRUSTED_KEYS = os.environ.get("NODUS_TRUSTED_KEYS", str(DATA_DIR / "keys" / "cosign.pub"))
NODUS_IMAGE_LAYOUT = os.environ.get("NODUS_IMAGE_LAYOUT", str(DATA_DIR / "oci-layout"))
NODUS_CONTROLLER_RESYNC_SECONDS = float(os.environ.get("NODUS_CONTROLLER_RESYNC_SECONDS", 300))
# Bounded controller work (runtimes.controller.loop): reconciles at once, the share of one core
# they may use together, and the per-runtime backoff on registry trouble (1 s doubling to 5 min,
# each delay shortened by up to a random quarter).
NODUS_CONTROLLER_WORKERS = int(os.environ.get("NODUS_CONTROLLER_WORKERS", 2))
NODUS_CONTROLLER_CPU_SHARE = float(os.environ.get("NODUS_CONTROLLER_CPU_SHARE", 0.2))
NODUS_CONTROLLER_BACKOFF_SECONDS = float(os.environ.get("NODUS_CONTROLLER_BACKOFF_SECONDS", 1))
NODUS_CONTROLLER_BACKOFF_MAX_SECONDS = float(
    os.environ.get("NODUS_CONTROLLER_BACKOFF_MAX_SECONDS", 300)
)
NODUS_CONTROLLER_BACKOFF_JITTER = float(os.environ.get("NODUS_CONTROLLER_BACKOFF_JITTER", 0.25))
# The controller's core/v1 Events: deleted when not seen again for NODUS_EVENTS_TTL_SECONDS
# (kube's one-hour event TTL), and at most NODUS_EVENTS_PER_NAMESPACE per project.
NODUS_EVENTS_TTL_SECONDS = float(os.environ.get("NODUS_EVENTS_TTL_SECONDS", 3600))
NODUS_EVENTS_PER_NAMESPACE = int(os.environ.get("NODUS_EVENTS_PER_NAMESPACE", 1000))
# Seats per client and per process in each pool of runtimes.api.flowcontrol (0: no limit);
# past either, 429 TooManyRequests with Retry-After: 1. The module says why these values.
NODUS_MAX_LISTS_PER_CLIENT = int(os.environ.get("NODUS_MAX_LISTS_PER_CLIENT", 2))
NODUS_MAX_WATCHES_PER_CLIENT = int(os.environ.get("NODUS_MAX_WATCHES_PER_CLIENT", 100))
NODUS_MAX_OTHERS_PER_CLIENT = int(os.environ.get("NODUS_MAX_OTHERS_PER_CLIENT", 8))
NODUS_MAX_LISTS_INFLIGHT = int(os.environ.get("NODUS_MAX_LISTS_INFLIGHT", 8))
NODUS_MAX_WATCHES_INFLIGHT = int(os.environ.get("NODUS_MAX_WATCHES_INFLIGHT", 1000))
NODUS_MAX_OTHERS_INFLIGHT = int(os.environ.get("NODUS_MAX_OTHERS_INFLIGHT", 16))
# When only the process's seats are taken, a request queues for one this long (and while fewer
# than this many wait), then gets 429.
NODUS_FLOW_QUEUE_SECONDS = float(os.environ.get("NODUS_FLOW_QUEUE_SECONDS", 10))
NODUS_FLOW_QUEUE_LENGTH = int(os.environ.get("NODUS_FLOW_QUEUE_LENGTH", 1000))
# Threads of the event loop's default executor (0: the list seats plus 4).
# API views run on this many long-lived threads that keep their database connections
# (runtimes.api.viewpool); the in-process tests turn the pool off.
NODUS_VIEW_POOL = True
NODUS_VIEW_THREADS = int(os.environ.get("NODUS_VIEW_THREADS", 24))
NODUS_ASGI_THREADS = int(os.environ.get("NODUS_ASGI_THREADS", 0))
# SIGTERM to exit, at most (runtimes.api.draining).
NODUS_SHUTDOWN_SECONDS = float(os.environ.get("NODUS_SHUTDOWN_SECONDS", 10))
# How often (ms) threads hand over the interpreter lock in `serve` (Python's default: 5).
NODUS_SWITCH_INTERVAL_MS = float(os.environ.get("NODUS_SWITCH_INTERVAL_MS", 1))
