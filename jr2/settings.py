"""Settings for jr2. The embedded default: SQLite (WAL) in the project's `.jr2/`, the in-memory channel layer, one
process hosting its runs. Every setting of jr2's own is in one table (jr2/conf.py) and reads an environment
variable of the same name; this module turns the table into Django's settings."""

import os
import tempfile
from pathlib import Path

import dj_database_url

from engine.conf import SETTINGS, read

#: The installed package's folder: the Console's templates and static files are beside it (in a wheel, inside it).
BASE_DIR = Path(__file__).resolve().parent.parent
_RESOURCES = Path(__file__).resolve().parent if (Path(__file__).resolve().parent / "templates").is_dir() else BASE_DIR

#: jr2's own settings, each a Django setting of the same name (`settings.JR2_LEASE_SECONDS`, ...).
JR2 = {setting.name: read(setting) for setting in SETTINGS}
globals().update(JR2)

SECRET_KEY = JR2["JR2_SECRET_KEY"]
DEBUG = JR2["JR2_DEBUG"]
ALLOWED_HOSTS = JR2["JR2_ALLOWED_HOSTS"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "ninja",  # the API docs page from its own static files (no CDN, no inline script)
    "engine",
    "console",
]

# Served in lean shapes (engine/web/middleware.py, `LeanAsgiHandler`): hooks without I/O on the event loop, and what
# serves browsers only (session, CSRF, the session's user, messages) skipped by a bearer API call. Named here as
# Django's own, which `check --deploy` and the admin's checks look for.
MIDDLEWARE = [
    "engine.web.middleware.ApiJsonErrors",
    "django.middleware.security.SecurityMiddleware",
    "engine.web.middleware.ContentSecurityPolicy",
    "engine.web.middleware.RefuseNul",
    # Static files, served under ASGI by servestatic, after the middleware above: they get the security headers too.
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "jr2.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [_RESOURCES / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.open_gates",
            ],
        },
    },
]

WSGI_APPLICATION = None
ASGI_APPLICATION = "jr2.asgi.application"

# DATABASE_URL (sqlite:///path, or postgres://... past one machine), else the project's SQLite file. No persistent
# connections (CONN_MAX_AGE 0), as Django says for ASGI: each request's database work runs on a thread of its own, so
# a kept connection is never reused, only left open (PostgreSQL ran out of connections). A host's database thread
# still keeps its one connection: nothing closes it between requests.
DATABASES = {
    "default": dj_database_url.parse(JR2["DATABASE_URL"] or f"sqlite:///{JR2['JR2_SQLITE_PATH']}", conn_max_age=0),
}
# WAL lets pages read while the host writes; IMMEDIATE makes writers queue instead of failing to upgrade.
SQLITE_OPTIONS = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["ENGINE"] = "jr2.sqlite"  # Django's, making the project's .jr2/ on first connection
    DATABASES["default"]["OPTIONS"] = dict(SQLITE_OPTIONS)
    # Tests use a file too: an in-memory shared-cache database locks whole tables between threads (the host's
    # database thread and a page's) instead of waiting, which a real server never sees.
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), f"jr2-test-{os.getpid()}.sqlite3")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [_RESOURCES / "static"]
# servestatic finds the files where they are (the Console's, the admin's, the API docs'): nothing to collect first.
SERVESTATIC_USE_FINDERS = True
SERVESTATIC_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Live pages and the API hear about each committed step through the channel layer (groups run-<id>, workflow-<name>):
# in memory in the embedded default, Redis when REDIS_URL is set.
# No client-side read timeout on Redis (redis-py 8 sets 5 s by default): the layer's receive blocks up to 5 s in
# Redis itself (BZPOPMIN), and a client timing out first crashed idle pages' consumers and the run hubs' listeners.
if JR2["REDIS_URL"]:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": JR2["REDIS_URL"], "socket_timeout": None}]},
        },
        # The notices that a run moved (engine/runtime/notify.py): lossy by contract, so Redis pub/sub, pushed to
        # the web processes at once.
        "notices": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": JR2["REDIS_URL"]}]},
        },
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "engine.runtime.layers.InMemoryLayer"}}

# `jr2 up` on a database with no user makes one superuser and prints a one-time link that logs it in.
JR2_FIRST_USER = True

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# The limiter counts in the cache: shared through Redis when REDIS_URL is set (a fleet of web processes must share
# it), else in this process's memory.
if JR2["REDIS_URL"]:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": JR2["REDIS_URL"],
            "OPTIONS": {"pool_class": "jr2.redis_pool.SharedPool"},  # not a new connection per request
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
