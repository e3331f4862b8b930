"""Settings for jr2. The embedded default: SQLite (WAL) beside the code, the in-memory channel layer, one process
hosting its runs. Every setting of jr2's own reads an environment variable of the same name."""
import json
import os
import tempfile
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("JR2_SECRET_KEY", "jr2-dev-only-not-a-secret")
DEBUG = os.environ.get("JR2_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("JR2_ALLOWED_HOSTS", "localhost,127.0.0.1").split(",")

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

MIDDLEWARE = [
    "engine.web.middleware.ApiJsonErrors",
    "django.middleware.security.SecurityMiddleware",
    "engine.web.middleware.ContentSecurityPolicy",
    "engine.web.middleware.RefuseNul",
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
        "DIRS": [BASE_DIR / "templates"],
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

# DATABASE_URL (sqlite:///path, or postgres://... past one machine), else db.sqlite3 beside manage.py. No persistent
# connections (CONN_MAX_AGE 0), as Django says for ASGI: each request's database work runs on a thread of its own, so
# a kept connection is never reused, only left open (PostgreSQL ran out of connections). A host's database thread
# still keeps its one connection: nothing closes it between requests.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{os.environ.get('JR2_SQLITE_PATH', BASE_DIR / 'db.sqlite3')}",
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets pages read while the host writes; IMMEDIATE makes writers queue instead of failing to upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
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
STATICFILES_DIRS = [BASE_DIR / "static"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The instance's workflows: each module in this folder that defines `machine` is one Workflow.
JR2_WORKFLOWS = os.environ.get("JR2_WORKFLOWS", str(BASE_DIR / "workflows"))

# Live pages and the API hear about each committed step through the channel layer (groups run-<id>, workflow-<name>):
# in memory in the embedded default, Redis when REDIS_URL is set.
# No client-side read timeout on Redis (redis-py 8 sets 5 s by default): the layer's receive blocks up to 5 s in
# Redis itself (BZPOPMIN), and a client timing out first crashed idle pages' consumers and the run hubs' listeners.
if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  "CONFIG": {"hosts": [{"address": os.environ["REDIS_URL"], "socket_timeout": None}]}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# The Console: "1" lets anyone read it without logging in (observers); acting always needs a permission.
JR2_CONSOLE_OPEN_READS = os.environ.get("JR2_CONSOLE_OPEN_READS", "") == "1"


def _env_json(name: str, default: object) -> object:
    value = os.environ.get(name)
    return json.loads(value) if value else default


# Model providers: the prefix of agent(model="<prefix>/<id>") picks a class (engine/runtime/providers/).
JR2_PROVIDERS = _env_json("JR2_PROVIDERS", {
    "anthropic": "engine.runtime.providers.anthropic.AnthropicProvider",
    "local": "engine.runtime.providers.local.LocalProvider",
    "script": "engine.runtime.providers.script.ScriptProvider",
    "human": "engine.runtime.providers.human.HumanProvider",
})
JR2_ANTHROPIC_BASE_URL = os.environ.get("JR2_ANTHROPIC_BASE_URL") or None
JR2_LOCAL_BASE_URL = os.environ.get("JR2_LOCAL_BASE_URL", "http://127.0.0.1:8080/v1")
JR2_LOCAL_API_KEY = os.environ.get("JR2_LOCAL_API_KEY", "not-needed")
JR2_PROVIDER_MAX_RETRIES = int(os.environ.get("JR2_PROVIDER_MAX_RETRIES", "3"))
JR2_PROVIDER_TIMEOUT = float(os.environ.get("JR2_PROVIDER_TIMEOUT", "600"))
# "<workflow>.<agent>" -> model, JSON: play those Agents on another model than their workflow declares
# (engine/runtime/players.py; `jr2 up` refuses a malformed one).
JR2_MODEL_OVERRIDE = os.environ.get("JR2_MODEL_OVERRIDE", "")
# "1": every Agent that has a scripted stand-in (@engine.scripted("<workflow>.<agent>")) uses it, key or not.
JR2_SCRIPTED = os.environ.get("JR2_SCRIPTED", "") == "1"

# The runtime: how often a run's whole state is snapshotted (journal entries), how long a host's lease on a run
# lasts (seconds: a dead worker's runs are taken over this long after its last renewal) and who this host is
# (default: `<host name>:up` for `jr2 up`, `<host name>:<role>:<pid>` for `jr2 worker` and `jr2 web`).
JR2_SNAPSHOT_EVERY = int(os.environ.get("JR2_SNAPSHOT_EVERY", "50"))
JR2_LEASE_SECONDS = float(os.environ.get("JR2_LEASE_SECONDS", "15"))
JR2_HOST_ID = os.environ.get("JR2_HOST_ID", "")
# The fleet (docs/deploy.md): how often a worker looks for runs to claim and inputs relayed to it without being woken
# through Redis (seconds), how many runs it claims at a time and at most, how long a web process waits for a worker
# to take a relayed input (seconds), and how long a worker draining on SIGTERM lets running Effects finish.
JR2_SCAN_SECONDS = float(os.environ.get("JR2_SCAN_SECONDS", "1"))
JR2_CLAIM_BATCH = int(os.environ.get("JR2_CLAIM_BATCH", "25"))
JR2_MAX_RUNS = int(os.environ.get("JR2_MAX_RUNS", "10000"))
JR2_RELAY_TIMEOUT = float(os.environ.get("JR2_RELAY_TIMEOUT", "30"))
JR2_DRAIN_SECONDS = float(os.environ.get("JR2_DRAIN_SECONDS", "10"))
# Agents' workspaces (agent(..., workspace="run" | "shared")): one folder per run under this root, beside the SQLite
# file by default; and their caps (JSON: file_bytes, read_bytes, total_bytes, files).
JR2_WORKSPACE_ROOT = os.environ.get("JR2_WORKSPACE_ROOT") or str(
    Path(os.environ.get("JR2_SQLITE_PATH") or BASE_DIR / "db.sqlite3").resolve().parent / "workspaces")
JR2_WORKSPACE_LIMITS = _env_json("JR2_WORKSPACE_LIMITS", {})
# The JSON API: reads need a token too unless this is "1".
JR2_OPEN_READS = os.environ.get("JR2_OPEN_READS", "") == "1"

# Security (docs/reliability.md, "Security"). The Content-Security-Policy of every page (engine/web/middleware.py):
# no inline script, no eval; "" sends none.
JR2_CSP = os.environ.get("JR2_CSP", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                                    "form-action 'self'; frame-ancestors 'none'")
# Failed logins (per address and per username) and wrong API tokens (per address): '<failures>/<seconds>', then
# 429 with Retry-After until the window ends (engine/web/ratelimit.py). Behind a proxy, the client's address is the last
# one of X-Forwarded-For (JR2_BEHIND_PROXY=1, which also trusts X-Forwarded-Proto for HTTPS).
JR2_RATE_LOGIN = os.environ.get("JR2_RATE_LOGIN", "10/300")
JR2_RATE_TOKEN = os.environ.get("JR2_RATE_TOKEN", "60/60")
JR2_BEHIND_PROXY = os.environ.get("JR2_BEHIND_PROXY", "") == "1"
# The limiter counts in the cache: shared through Redis when REDIS_URL is set (a fleet of web processes must share
# it), else in this process's memory.
if os.environ.get("REDIS_URL"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": os.environ["REDIS_URL"]}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
