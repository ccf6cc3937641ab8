"""memoryviz settings: one file, driven by the environment.

SQLite in the project folder by default; ``DATABASE_URL`` switches to PostgreSQL.
"""
from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a whole number") from None
    if number < 0:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number of 0 or more")
    return number


def _env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto=https`` (or Django's own spelling ``HTTP_X_FORWARDED_PROTO,https``): the header a proxy
    in front sets, and the value that means the client came over HTTPS."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    header, sep, expected = value.replace(",", "=", 1).partition("=")
    header, expected = header.strip(), expected.strip()
    if not sep or not header or not expected:
        raise ImproperlyConfigured(f"{name}={value!r}: expected HEADER=VALUE, e.g. X-Forwarded-Proto=https")
    meta = header.upper().replace("-", "_")
    return (meta if meta.startswith("HTTP_") else f"HTTP_{meta}", expected)


DEBUG = _env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "agents.admin_site.MemoryvizAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files: no CDN
    "django_htmx",
    "template_partials",
    "django_tasks",
    "django_tasks_db",
    "agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Outside the others, so that the responses they answer themselves (CSRF failure, login redirect) carry it too.
    "memoryviz.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "agents.http.VaryOnHtmxMiddleware",
]

ROOT_URLCONF = "memoryviz.urls"

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
            ],
        },
    },
]

WSGI_APPLICATION = "memoryviz.wsgi.application"

_sqlite_path = BASE_DIR / "db.sqlite3"
DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL",
        default=f"sqlite:///{_sqlite_path}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            # WAL lets the dashboard read while an import writes; the busy timeout waits for a lock
            # instead of failing at once.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# Argon2id first (memoryviz.hashers: OWASP's parameters); PBKDF2 after it, so that existing hashes still verify, and
# are made again with Argon2 at the next login.
PASSWORD_HASHERS = [
    "memoryviz.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "agents:session_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Uploads: big histories are streamed from a temporary file, never held whole in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
# The largest OTLP/HTTP request body, after gzip (every call span of an agent carries its whole history).
MEMORYVIZ_OTLP_MAX_BYTES = int(os.environ.get("MEMORYVIZ_OTLP_MAX_BYTES", str(32 * 1024 * 1024)))
MEMORYVIZ_MAX_UPLOAD_BYTES = int(os.environ.get("MEMORYVIZ_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024)))
# Where an upload waits between its preview and the confirmation. Several application servers behind one
# database need a folder they all share; by default, the system's temporary folder.
MEMORYVIZ_UPLOAD_DIR = os.environ.get("MEMORYVIZ_UPLOAD_DIR") or None
# An upload not confirmed within this time is removed; a user keeps at most this many, of this many bytes in all.
MEMORYVIZ_UPLOAD_TTL_SECONDS = int(os.environ.get("MEMORYVIZ_UPLOAD_TTL_SECONDS", "3600"))
MEMORYVIZ_UPLOADS_PER_USER = int(os.environ.get("MEMORYVIZ_UPLOADS_PER_USER", "5"))
MEMORYVIZ_UPLOAD_BYTES_PER_USER = int(
    os.environ.get("MEMORYVIZ_UPLOAD_BYTES_PER_USER", str(2 * MEMORYVIZ_MAX_UPLOAD_BYTES))
)

# An import writes its sessions hidden (agents.transfer.imports) and commits a batch every few thousand messages; a
# hidden session whose process is gone, or (written from another host) that committed nothing for this long, is
# removed by `manage.py cleanup_imports` (which `make run` runs at start).
MEMORYVIZ_IMPORT_STALE_SECONDS = _env_int("MEMORYVIZ_IMPORT_STALE_SECONDS", 15 * 60)

# The session list's text search uses the trigram index of migration 0011 (FTS5 on SQLite, pg_trgm on PostgreSQL);
# false looks for the text by a plain scan of the contents (the same sessions, slower).
MEMORYVIZ_SEARCH_INDEX = _env_bool("MEMORYVIZ_SEARCH_INDEX", True)

# Expensive requests (agents.throttling): the lab, compare and report pages, diffs, the trim API, exports and
# imports. Per user, API and pages together, at most MEMORYVIZ_EXPENSIVE_RATE (DRF's "N/second|minute|hour|day";
# empty: no rate); in one server process at most MEMORYVIZ_EXPENSIVE_CONCURRENCY at once (0: no limit); beyond,
# 429 or 503 with Retry-After (MEMORYVIZ_BUSY_RETRY_SECONDS when busy).
MEMORYVIZ_EXPENSIVE_RATE = os.environ.get("MEMORYVIZ_EXPENSIVE_RATE", "120/min").strip()
MEMORYVIZ_EXPENSIVE_CONCURRENCY = _env_int("MEMORYVIZ_EXPENSIVE_CONCURRENCY", 4)
MEMORYVIZ_BUSY_RETRY_SECONDS = _env_int("MEMORYVIZ_BUSY_RETRY_SECONDS", 5)

# The lab replays every call of a session for its slider and chart: past this many messages the preview answers
# first and the replay follows in a second request (htmx; ?replay=inline without JavaScript). At 10,000 messages
# the replay costs more than the rest of the preview (bench/README.md, issue 10).
MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES = _env_int("MEMORYVIZ_LAB_REPLAY_INLINE_MESSAGES", 5_000)

# Long work in the background (agents.jobs.queue), run by `manage.py run_worker` (which `make run` starts beside the
# server) through django-tasks' database backend: with PostgreSQL, workers on several machines share the queue.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
# A report over more messages than this, an export of more messages, an import of a larger file: a background job
# whose page shows its progress, rather than one long request.
MEMORYVIZ_BACKGROUND_REPORT_MESSAGES = _env_int("MEMORYVIZ_BACKGROUND_REPORT_MESSAGES", 50_000)
MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES = _env_int("MEMORYVIZ_BACKGROUND_EXPORT_MESSAGES", 200_000)
MEMORYVIZ_BACKGROUND_IMPORT_BYTES = _env_int("MEMORYVIZ_BACKGROUND_IMPORT_BYTES", 20 * 1024 * 1024)
# Where finished exports wait for their owner to download them, and how long (then the job and its file go).
MEMORYVIZ_JOB_DIR = os.environ.get("MEMORYVIZ_JOB_DIR") or str(BASE_DIR / "job-files")
MEMORYVIZ_JOB_TTL_SECONDS = _env_int("MEMORYVIZ_JOB_TTL_SECONDS", 24 * 3600)
# A running job whose worker wrote no progress for this long (or whose process on this host is gone) is queued
# again by the next worker that looks.
MEMORYVIZ_JOB_STALE_SECONDS = _env_int("MEMORYVIZ_JOB_STALE_SECONDS", 120)
# The niceness (0 to 19) of batch work: `manage.py import_history` and `manage.py run_worker` take it at start
# (agents.jobs.queue.batch_priority), so that a big import leaves the CPU to the pages and the API first
# (bench/README.md, "Logins and page views during a big import"). 0: the same priority as the server.
MEMORYVIZ_BATCH_NICE = _env_int("MEMORYVIZ_BATCH_NICE", 10)

# Password guessing (agents.auth): a username, or a client address, that fails this many times within the window
# waits until enough of those failures are older than the window. Behind proxies, MEMORYVIZ_NUM_PROXIES says how
# many (each appends to X-Forwarded-For), so that the client's address is counted, not the proxy's.
MEMORYVIZ_LOGIN_WINDOW_SECONDS = _env_int("MEMORYVIZ_LOGIN_WINDOW_SECONDS", 15 * 60)
MEMORYVIZ_LOGIN_FAILURES_PER_USERNAME = _env_int("MEMORYVIZ_LOGIN_FAILURES_PER_USERNAME", 10)
MEMORYVIZ_LOGIN_FAILURES_PER_ADDRESS = _env_int("MEMORYVIZ_LOGIN_FAILURES_PER_ADDRESS", 30)
MEMORYVIZ_NUM_PROXIES = _env_int("MEMORYVIZ_NUM_PROXIES", 0)

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # What a trim computed (services.session_trim), keyed by the session's content_version. In this process by
    # default; several app servers share one with MEMORYVIZ_TRIM_CACHE=database (run `manage.py createcachetable`).
    "trims": (
        {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "memoryviz_trim_cache",
         "TIMEOUT": 24 * 3600}
        if os.environ.get("MEMORYVIZ_TRIM_CACHE") == "database"
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "trims", "TIMEOUT": 3600,
              "OPTIONS": {"MAX_ENTRIES": 2_000}}
    ),
    # Successful HTTP Basic checks, remembered in this process only (agents.auth), so that a script's every request
    # does not pay the password hasher again. A changed password never matches a remembered check.
    # Request histories of agents.throttling's per-user rate (in this process; a database cache would share them
    # between application servers).
    "throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"},
    "verified-credentials": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "verified-credentials",
        "TIMEOUT": _env_int("MEMORYVIZ_BASIC_AUTH_REMEMBER_SECONDS", 300),
        "OPTIONS": {"MAX_ENTRIES": 10_000},
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "agents.auth.ThrottledBasicAuthentication",
        "agents.api.auth.ApiKeyAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "agents.api.endpoints.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # The browsable API shows an endpoint's docstring with its ``literals`` as code, not as text with backticks.
    "VIEW_DESCRIPTION_FUNCTION": "agents.api.endpoints.view_description",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "memoryviz API",
    "DESCRIPTION": (
        "Read and write agent conversations. Authenticate with a project API key (`Authorization: Bearer <key>`, "
        "created on the project's settings page or with `python manage.py api_key create`), HTTP Basic, or the "
        "browser session. Errors are `{\"error\": \"...\"}`. OpenTelemetry exporters post OTLP/HTTP to "
        "`/otlp/v1/traces` and `/otlp/v1/logs` with the same key."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Like every URL: for a logged-in user or an API client (Bearer key, Basic, session).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": [
        "agents.auth.ThrottledBasicAuthentication",
        "agents.api.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api/",
    # 3.1: the request bodies are pydantic models, whose optional fields are "null" types (not in 3.0).
    "OAS_VERSION": "3.1.0",
}

# Behind a proxy that ends TLS: SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto=https (only when the proxy always sets or
# overwrites that header; otherwise a client could claim HTTPS). SECURE_SSL_REDIRECT sends http:// to https://;
# SECURE_HSTS_SECONDS makes browsers use https:// only, for that long (start small: it cannot be taken back).
SECURE_PROXY_SSL_HEADER = _env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
SECURE_SSL_REDIRECT = _env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = _env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_bool("SECURE_HSTS_PRELOAD", False)

# memoryviz.security.ContentSecurityPolicyMiddleware: scripts and styles from this origin only. CSP_REPORT_ONLY=true
# sends the policy as Content-Security-Policy-Report-Only (browsers report, nothing is blocked); CSP_REPORT_URI names
# where browsers report.
CONTENT_SECURITY_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
CSP_REPORT_ONLY = _env_bool("CSP_REPORT_ONLY", False)
CSP_REPORT_URI = os.environ.get("CSP_REPORT_URI", "").strip()

if not DEBUG:
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SESSION_COOKIE_SECURE = _env_bool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = _env_bool("SECURE_COOKIES", True)
    X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
