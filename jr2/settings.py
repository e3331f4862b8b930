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
    "engine",
    "console",
]

MIDDLEWARE = [
    "engine.middleware.ApiJsonErrors",
    "django.middleware.security.SecurityMiddleware",
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
            ],
        },
    },
]

WSGI_APPLICATION = None
ASGI_APPLICATION = "jr2.asgi.application"

# DATABASE_URL (sqlite:///path, or postgres://... past one machine), else db.sqlite3 beside manage.py.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{os.environ.get('JR2_SQLITE_PATH', BASE_DIR / 'db.sqlite3')}",
        conn_max_age=None if os.environ.get("DATABASE_URL", "").startswith("postgres") else 0,
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
if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  "CONFIG": {"hosts": [os.environ["REDIS_URL"]]}}}
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


# Model providers: the prefix of agent(model="<prefix>/<id>") picks a class (engine/providers/).
JR2_PROVIDERS = _env_json("JR2_PROVIDERS", {
    "anthropic": "engine.providers.anthropic.AnthropicProvider",
    "local": "engine.providers.local.LocalProvider",
    "script": "engine.providers.script.ScriptProvider",
    "human": "engine.providers.human.HumanProvider",
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
# lasts (seconds) and who this host is (default: host name and process id).
JR2_SNAPSHOT_EVERY = int(os.environ.get("JR2_SNAPSHOT_EVERY", "50"))
JR2_LEASE_SECONDS = float(os.environ.get("JR2_LEASE_SECONDS", "15"))
JR2_HOST_ID = os.environ.get("JR2_HOST_ID", "")
# The JSON API: reads need a token too unless this is "1".
JR2_OPEN_READS = os.environ.get("JR2_OPEN_READS", "") == "1"
