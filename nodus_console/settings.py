"""Settings, all from the environment.

The embedded default needs nothing set: SQLite in ``$NODUS_DATA_DIR`` (default ``./.data``), an
in-memory channel layer and the in-process controller. Scale-out sets ``DATABASE_URL``
(PostgreSQL) and ``REDIS_URL`` (channels-redis) and runs the controller as its own command.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("NODUS_DATA_DIR", BASE_DIR / ".data")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").lower() in {"1", "true", "yes", "on"}


def _secret_key() -> str:
    if key := os.environ.get("DJANGO_SECRET_KEY"):
        return key
    # Generated once and kept beside the data, so sessions and tokens survive restarts.
    path = DATA_DIR / "secret-key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
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
    "runtimes",
]

MIDDLEWARE = [
    "runtimes.api.requestid.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

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
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
CHANNEL_LAYERS = {
    "default": (
        {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
        if REDIS_URL
        else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    )
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve straight from the finders: no collectstatic step, so `make run` and tests need no build.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LOGIN_URL = "/login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# kube-apiserver's default --max-request-bytes is 3 MiB; bodies above it answer 413.
NODUS_MAX_BODY_BYTES = int(os.environ.get("NODUS_MAX_BODY_BYTES", 3 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = NODUS_MAX_BODY_BYTES

# How many revisions the event log keeps before compaction (older ones answer 410 Expired).
NODUS_EVENT_WINDOW = int(os.environ.get("NODUS_EVENT_WINDOW", 100_000))
# Recent events each process keeps in memory for watchers; one that falls further behind is
# closed with 410 and resumes from the log.
NODUS_HUB_RING = int(os.environ.get("NODUS_HUB_RING", 4096))
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
    },
}

# The verification controller (read by runtimes.controller.settings). Registries off the
# allow-list are never contacted; images under registry.nodus.dev come from the local image
# layout that `manage.py seed` fills. Trusted keys default to the key pair the seed generates.
NODUS_REGISTRY_ALLOW = os.environ.get("NODUS_REGISTRY_ALLOW", "")
NODUS_REGISTRY_CREDENTIALS = os.environ.get("NODUS_REGISTRY_CREDENTIALS", "")
NODUS_TRUSTED_KEYS = os.environ.get("NODUS_TRUSTED_KEYS", str(DATA_DIR / "keys" / "cosign.pub"))
NODUS_IMAGE_LAYOUT = os.environ.get("NODUS_IMAGE_LAYOUT", str(DATA_DIR / "oci-layout"))
NODUS_CONTROLLER_RESYNC_SECONDS = float(os.environ.get("NODUS_CONTROLLER_RESYNC_SECONDS", 300))
