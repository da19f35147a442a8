"""Settings, all from the environment.

The embedded default needs nothing set: SQLite in ``$NODUS_DATA_DIR`` (default ``./.data``), an
in-memory channel layer and the in-process controller. Scale-out sets ``DATABASE_URL``
(PostgreSQL) and ``REDIS_URL`` (channels-redis) and runs the controller as its own command.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from csp.constants import NONE, SELF

from nodus_console.declared import declare, flag
from runtimes.accounts.privatefiles import private_database, private_dir, tighten, write_private

HOSTS_DOC = "host names the console and API answer to, comma-separated; * for any"
ORIGINS_DOC = "origins trusted for CSRF, comma-separated, for a public deployment"

BASE_DIR = Path(__file__).resolve().parent.parent
# The data dir holds the database and the keys: 0700, and its secrets 0600 (privatefiles).
NODUS_DATA_DIR = declare(
    "NODUS_DATA_DIR",
    str,
    str(BASE_DIR / ".data"),
    "SQLite file, secret key, admin password, signing keys, OCI image layout",
    shown="./.data",
)
DATA_DIR = private_dir(Path(NODUS_DATA_DIR).resolve())
_SECRET_KEY = declare(
    "DJANGO_SECRET_KEY", str, "", "sessions and CSRF", shown="generated into the data dir"
)


def _secret_key() -> str:
    if key := _SECRET_KEY:
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
DEBUG = declare("DEBUG", flag, False, "Django debug pages")
ALLOWED_HOSTS = [h for h in declare("ALLOWED_HOSTS", str, "*", HOSTS_DOC).split(",") if h]
CSRF_TRUSTED_ORIGINS = [
    o for o in declare("CSRF_TRUSTED_ORIGINS", str, "", ORIGINS_DOC).split(",") if o
]

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
    # Inside the request id (its auditID), outside everything that may refuse (CSRF, axes).
    "runtimes.api.auditing.AuditMiddleware",
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
            "builtins": ["runtimes.console.ages"],
        },
    },
]

DATABASES = {
    "default": _database(
        declare(
            "DATABASE_URL",
            str,
            f"sqlite:///{DATA_DIR / 'nodus.sqlite3'}",
            "sqlite:////abs/path or postgres://user:pass@host:5432/db?conn_max_age=60",
            shown="sqlite:///$NODUS_DATA_DIR/nodus.sqlite3",
        )
    )
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


REDIS_URL = declare(
    "REDIS_URL",
    str,
    "",
    "redis://127.0.0.1:6379/0: the channel layer workers share (watch nudges, live console); "
    "unset, an in-memory one",
)
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
NODUS_STATIC_ROOT = declare(
    "NODUS_STATIC_ROOT",
    str,
    str(DATA_DIR / "static"),
    "where serve collects the static files (hashed names, gzip copies)",
    shown="$NODUS_DATA_DIR/static",
)
STATIC_ROOT = Path(NODUS_STATIC_ROOT).resolve()
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
CSRF_FAILURE_VIEW = "runtimes.console.errors.csrf_failure"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
NODUS_HSTS_SECONDS = declare(
    "NODUS_HSTS_SECONDS",
    int,
    365 * 24 * 3600,
    "Strict-Transport-Security max-age on answers over TLS; 0 sends none",
)
SECURE_HSTS_SECONDS = NODUS_HSTS_SECONDS
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
NODUS_MAX_BODY_BYTES = declare(
    "NODUS_MAX_BODY_BYTES",
    int,
    3 * 1024 * 1024,
    "larger request bodies answer 413, as kube-apiserver's",
)
DATA_UPLOAD_MAX_MEMORY_SIZE = NODUS_MAX_BODY_BYTES

# How many revisions the event log keeps before compaction (older ones answer 410 Expired).
NODUS_EVENT_WINDOW = declare(
    "NODUS_EVENT_WINDOW",
    int,
    100_000,
    "revisions kept in the event log; older watch starts answer 410 Expired",
)
# Recent events each process keeps in memory for watchers; one that falls further behind is
# closed with 410 and resumes from the log.
NODUS_HUB_RING = declare(
    "NODUS_HUB_RING",
    int,
    4096,
    "recent events each process keeps in memory for watches and for lists at older revisions",
)
# Lists are answered from each process's watch cache (runtimes.watch.cache), kept current by
# the hub; off, every list reads SQL.
NODUS_WATCH_CACHE = declare(
    "NODUS_WATCH_CACHE",
    flag,
    True,
    "answer lists from each process's in-memory watch cache (0: every list reads SQL)",
)
NODUS_WATCH_BOOKMARK_SECONDS = declare(
    "NODUS_WATCH_BOOKMARK_SECONDS",
    float,
    60.0,
    "how often a watch that asked for bookmarks gets one",
)
# A watch without timeoutSeconds ends at a random point in this range (kube: 30 to 60 minutes).
NODUS_WATCH_TIMEOUT_RANGE = tuple(
    int(v)
    for v in declare(
        "NODUS_WATCH_TIMEOUT_RANGE",
        str,
        "1800,3600",
        "a watch without timeoutSeconds ends after a random time between these (seconds)",
    ).split(",")
)
NODUS_ADMIN_USER = declare("NODUS_ADMIN_USER", str, "admin", "the platform admin made at start-up")
NODUS_PUBLIC_URL = declare(
    "NODUS_PUBLIC_URL",
    str,
    "",
    "the API URL written into kubeconfigs (behind a TLS-terminating proxy: its URL); default "
    "https://$HOST:$TLS_PORT",
)
# The in-process controller runs beside the web server unless this is off (scale-out runs
# `manage.py runcontroller` instead).
NODUS_EMBEDDED_CONTROLLER = declare(
    "NODUS_EMBEDDED_CONTROLLER",
    flag,
    True,
    "run the controller inside serve; 0 at scale (run manage.py runcontroller)",
)
# The controller's service account token (scale-out: `manage.py createtoken --user
# system:serviceaccount:nodus:controller`); unset, the controller keeps one in DATA_DIR.
NODUS_CONTROLLER_TOKEN = declare(
    "NODUS_CONTROLLER_TOKEN",
    str,
    "",
    "the token the controller writes status with (its service account's); default: kept in "
    "$NODUS_DATA_DIR/controller-token",
)

# Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT failed sign-ins for one username from
# one address, the console's and /admin's sign-in answer 429 with the lockout page until the
# cool-off has passed since the last failure; a successful sign-in resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
NODUS_LOGIN_FAILURE_LIMIT = declare(
    "NODUS_LOGIN_FAILURE_LIMIT",
    int,
    5,
    "failed sign-ins per username and address before a lockout",
)
NODUS_LOGIN_COOLOFF_MINUTES = declare(
    "NODUS_LOGIN_COOLOFF_MINUTES", float, 15.0, "how long a sign-in lockout lasts", shown="15"
)
AXES_FAILURE_LIMIT = NODUS_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=NODUS_LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Trying again while locked out does not push the end of the lockout further away.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "runtimes.console.signin.locked_out"
# Failed bearer tokens per client address (runtimes.accounts.throttling): past the limit within
# the window, 429 TooManyRequests with Retry-After.
NODUS_TOKEN_FAILURE_LIMIT = declare(
    "NODUS_TOKEN_FAILURE_LIMIT",
    int,
    20,
    "failed bearer tokens per address within the window before 429",
)
NODUS_TOKEN_FAILURE_WINDOW = declare(
    "NODUS_TOKEN_FAILURE_WINDOW",
    float,
    60.0,
    "the window (seconds) failed bearer tokens are counted in",
)
# OpenID Connect (runtimes.accounts.oidc, docs/oidc.md), off unless the issuer is set; each is
# kube-apiserver's --oidc-* flag of the same name.
NODUS_OIDC_ISSUER_URL = declare(
    "NODUS_OIDC_ISSUER_URL", str, "", "the OpenID Connect issuer's URL (https, or http on loopback)"
)
NODUS_OIDC_CLIENT_ID = declare(
    "NODUS_OIDC_CLIENT_ID",
    str,
    "",
    "the audience every ID token must carry, and the console's client at the provider",
)
NODUS_OIDC_CLIENT_SECRET = declare(
    "NODUS_OIDC_CLIENT_SECRET",
    str,
    "",
    "the console's client secret for the code exchange (empty: a public client, PKCE alone)",
)
NODUS_OIDC_USERNAME_CLAIM = declare(
    "NODUS_OIDC_USERNAME_CLAIM", str, "sub", "the claim that names the user"
)
NODUS_OIDC_USERNAME_PREFIX = declare(
    "NODUS_OIDC_USERNAME_PREFIX",
    str,
    "",
    "put before each username (empty: the issuer and # unless the claim is email; - : none)",
)
NODUS_OIDC_GROUPS_CLAIM = declare(
    "NODUS_OIDC_GROUPS_CLAIM", str, "groups", "the claim listing the user's groups (empty: none)"
)
NODUS_OIDC_GROUPS_PREFIX = declare("NODUS_OIDC_GROUPS_PREFIX", str, "", "put before each group")
NODUS_OIDC_SCOPES = declare(
    "NODUS_OIDC_SCOPES",
    str,
    "openid email profile",
    "the scopes the console asks for at sign-in (add groups for providers such as Dex)",
)
NODUS_OIDC_CA_FILE = declare(
    "NODUS_OIDC_CA_FILE", str, "", "a PEM bundle to verify the issuer's certificate with"
)
NODUS_OIDC_REFRESH_SECONDS = declare(
    "NODUS_OIDC_REFRESH_SECONDS",
    float,
    10.0,
    "an unknown key id refetches the issuer's JWKS at most once per this many seconds",
)
NODUS_OIDC_FETCH_TIMEOUT = declare(
    "NODUS_OIDC_FETCH_TIMEOUT",
    float,
    5.0,
    "seconds one discovery or JWKS fetch (and the console's code exchange) may take",
)
NODUS_OIDC_MAX_DOCUMENT_BYTES = declare(
    "NODUS_OIDC_MAX_DOCUMENT_BYTES",
    int,
    256 * 1024,
    "the largest discovery or JWKS document read",
)
# The audit log (runtimes.accounts.auditlog, docs/audit.md).
NODUS_AUDIT_LOG = declare(
    "NODUS_AUDIT_LOG",
    str,
    str(DATA_DIR / "audit" / "audit.log"),
    "audit.k8s.io/v1 Events as JSON lines",
    shown="$NODUS_DATA_DIR/audit/audit.log",
)
NODUS_AUDIT_MAX_BYTES = declare(
    "NODUS_AUDIT_MAX_BYTES", int, 100 * 1024 * 1024, "the audit log is rotated past this size"
)
NODUS_AUDIT_BACKUPS = declare("NODUS_AUDIT_BACKUPS", int, 5, "rotated audit logs kept")
NODUS_AUDIT_QUEUE = declare(
    "NODUS_AUDIT_QUEUE",
    int,
    10_000,
    "events waiting for the writer thread at most; past it new ones are dropped and counted",
)
# Open watches and websockets check their caller again after any access change (at most this long
# after it, runtimes.watch.guard) and, whatever happened, every NODUS_STREAM_RECHECK_SECONDS.
# A token's user and a caller's role, once found, are reused while access is unchanged and for
# at most this long (runtimes.accounts.memo); 0 looks them up on every request.
NODUS_ACCESS_CACHE_SECONDS = declare(
    "NODUS_ACCESS_CACHE_SECONDS",
    float,
    2.0,
    "a token's user and a caller's role are reused while access is unchanged, and at most this "
    "long",
)
# When a token was last used is written at most once a minute per token, by a thread every this
# many seconds (runtimes.accounts.tokens), never by the request; 0 writes it in the request.
NODUS_TOKEN_TOUCH_SECONDS = declare(
    "NODUS_TOKEN_TOUCH_SECONDS",
    float,
    10.0,
    "a token's last use is written by a thread this often, never by the request; 0 writes it in "
    "the request",
)
NODUS_STREAM_POLL_SECONDS = declare(
    "NODUS_STREAM_POLL_SECONDS",
    float,
    1.0,
    "how often each process reads the revocation epoch, so open streams end after an access change"
    " made anywhere",
)
NODUS_STREAM_RECHECK_SECONDS = declare(
    "NODUS_STREAM_RECHECK_SECONDS",
    float,
    30.0,
    "open watches and websockets check their caller at least this often",
)
NODUS_REVOCATION_POLL_SECONDS = declare(
    "NODUS_REVOCATION_POLL_SECONDS",
    float,
    1.0,
    "every process reads the stored access epoch this often (once a process, not a stream), so "
    "an access change made by any process, a CLI included, reaches its streams without Redis",
)
NODUS_WORKER_BACKOFF_MAX_SECONDS = declare(
    "NODUS_WORKER_BACKOFF_MAX_SECONDS",
    float,
    30.0,
    "serve --workers N replaces a dead worker at once; one that keeps dying waits doubling "
    "from 0.5 s up to this long",
)

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

NODUS_LOG_LEVEL = declare(
    "NODUS_LOG_LEVEL", str, "INFO", "one access-log line per request (with its request id) at INFO"
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "nodus": {
            "handlers": ["console"],
            "level": NODUS_LOG_LEVEL,
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
NODUS_REGISTRY_ALLOW = declare(
    "NODUS_REGISTRY_ALLOW",
    str,
    "",
    "registries the controller may contact (comma-separated; default: the local layout only)",
)
NODUS_REGISTRY_CREDENTIALS = declare(
    "NODUS_REGISTRY_CREDENTIALS", str, "", "credentials for those registries"
)
# Seconds one registry request may take (connect and each read); past it, a transient error
# that the controller retries with backoff.
NODUS_REGISTRY_TIMEOUT = declare(
    "NODUS_REGISTRY_TIMEOUT",
    float,
    10.0,
    "seconds one registry request may take before the controller retries with backoff",
)
NODUS_TRUSTED_KEYS = declare(
    "NODUS_TRUSTED_KEYS",
    str,
    str(DATA_DIR / "keys" / "cosign.pub"),
    "cosign public keys for managed runtimes (comma-separated files)",
    shown="$NODUS_DATA_DIR/keys/cosign.pub",
)
NODUS_IMAGE_LAYOUT = declare(
    "NODUS_IMAGE_LAYOUT",
    str,
    str(DATA_DIR / "oci-layout"),
    "the OCI image layout behind registry.nodus.dev",
    shown="$NODUS_DATA_DIR/oci-layout",
)
NODUS_CONTROLLER_RESYNC_SECONDS = declare(
    "NODUS_CONTROLLER_RESYNC_SECONDS", float, 300.0, "full resync period of the controller"
)
# Bounded controller work (runtimes.controller.loop): reconciles at once, the share of one core
# they may use together, and the per-runtime backoff on registry trouble (1 s doubling to 5 min,
# each delay shortened by up to a random quarter).
NODUS_CONTROLLER_WORKERS = declare("NODUS_CONTROLLER_WORKERS", int, 2, "reconciles at once")
NODUS_CONTROLLER_CPU_SHARE = declare(
    "NODUS_CONTROLLER_CPU_SHARE",
    float,
    0.2,
    "the share of one core the controller's workers may use together",
)
NODUS_CONTROLLER_BACKOFF_SECONDS = declare(
    "NODUS_CONTROLLER_BACKOFF_SECONDS",
    float,
    1.0,
    "per-runtime retry on registry trouble: the first delay",
)
NODUS_CONTROLLER_BACKOFF_MAX_SECONDS = declare(
    "NODUS_CONTROLLER_BACKOFF_MAX_SECONDS",
    float,
    300.0,
    "per-runtime retry on registry trouble: the longest delay",
)
NODUS_CONTROLLER_BACKOFF_JITTER = declare(
    "NODUS_CONTROLLER_BACKOFF_JITTER",
    float,
    0.25,
    "each retry delay shortened by up to this random share",
)
# The controller's core/v1 Events: deleted when not seen again for NODUS_EVENTS_TTL_SECONDS
# (kube's one-hour event TTL), and at most NODUS_EVENTS_PER_NAMESPACE per project.
NODUS_EVENTS_TTL_SECONDS = declare(
    "NODUS_EVENTS_TTL_SECONDS",
    float,
    3600.0,
    "the controller's Events are deleted when not seen again for this long (kube's event TTL)",
)
NODUS_EVENTS_PER_NAMESPACE = declare(
    "NODUS_EVENTS_PER_NAMESPACE",
    int,
    1000,
    "at most this many Events per project; recording one more deletes the least recently seen "
    "tenth",
)
# API Priority and Fairness (runtimes.api.flowcontrol, which says why these values): the seats
# the priority levels share, a list's width in seats, each fair queue's length and the longest
# wait for seats before 429, and the open watches a process holds.
NODUS_FLOW_SEATS = declare(
    "NODUS_FLOW_SEATS", int, 24, "API Priority and Fairness: the seats the priority levels share"
)
NODUS_FLOW_LIST_WIDTH = declare(
    "NODUS_FLOW_LIST_WIDTH", int, 8, "seats a list (or a watch's initial list) takes"
)
NODUS_FLOW_QUEUE_LENGTH = declare(
    "NODUS_FLOW_QUEUE_LENGTH", int, 16, "requests at most waiting in one fair queue; past it, 429"
)
NODUS_FLOW_QUEUE_SECONDS = declare(
    "NODUS_FLOW_QUEUE_SECONDS", float, 15.0, "the longest wait for seats; past it, 429"
)
NODUS_FLOW_REFUSAL_SPREAD_SECONDS = declare(
    "NODUS_FLOW_REFUSAL_SPREAD_SECONDS",
    float,
    1.0,
    "a 429 for a full queue is answered after a random part of this, so a burst's retries spread",
)
NODUS_MAX_WATCHES_INFLIGHT = declare(
    "NODUS_MAX_WATCHES_INFLIGHT",
    int,
    1000,
    "open watches and websockets a process holds; past it, 429 (0: no bound)",
)
# API views run on this many long-lived threads that keep their database connections
# (runtimes.api.viewpool).
NODUS_VIEW_THREADS = declare(
    "NODUS_VIEW_THREADS",
    int,
    24,
    "long-lived threads that run API views, each keeping its database connection",
)
NODUS_ASGI_THREADS = declare(
    "NODUS_ASGI_THREADS",
    int,
    0,
    "threads of the event loop's executor (0: the lists the seats allow, plus 4)",
)
# SIGTERM to exit, at most (runtimes.api.draining).
NODUS_SHUTDOWN_SECONDS = declare("NODUS_SHUTDOWN_SECONDS", float, 10.0, "SIGTERM to exit, at most")
# How often (ms) threads hand over the interpreter lock in `serve` (Python's default: 5).
NODUS_SWITCH_INTERVAL_MS = declare(
    "NODUS_SWITCH_INTERVAL_MS",
    float,
    1.0,
    "how often serve's threads hand over the interpreter lock (Python's default: 5)",
)
NODUS_CONTROLLER_POLL_SECONDS = declare(
    "NODUS_CONTROLLER_POLL_SECONDS",
    float,
    1.0,
    "how often the controller's loop looks for due work when nothing woke it",
)
NODUS_HEALTH_CHECK_TIMEOUT = declare(
    "NODUS_HEALTH_CHECK_TIMEOUT", float, 2.0, "seconds each health check may take"
)
NODUS_READYZ_MAX_HUB_LAG = declare(
    "NODUS_READYZ_MAX_HUB_LAG",
    int,
    1000,
    "/readyz fails when the watch hub is further behind the event log",
)
NODUS_METRICS_ANONYMOUS = declare(
    "NODUS_METRICS_ANONYMOUS", flag, False, "1 lets anyone scrape /metrics (docs/operations.md)"
)
# Read where they are used (the process environment of `serve`, the catalog's pure loader):
# declared here so the documentation and the check of every variable read know them.
declare(
    "NODUS_ADMIN_PASSWORD",
    str,
    "",
    "the platform admin's password",
    shown="generated once, kept in the data dir",
)
declare(
    "NODUS_ACCELERATORS_FILE",
    str,
    "",
    "the accelerator catalog file",
    shown="runtimes/data/accelerators.yaml",
)
declare("HOST", str, "127.0.0.1", "where manage.py serve listens (HTTP: console and API)")
declare("PORT", int, 8000, "the HTTP port of manage.py serve")
declare("TLS_PORT", int, 8443, "the HTTPS port serve opens for kubectl (self-signed)")
declare(
    "WORKERS",
    int,
    1,
    "manage.py serve --workers N: N supervised worker processes behind the same two ports",
)
