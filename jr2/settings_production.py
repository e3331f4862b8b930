"""Production settings: `DJANGO_SETTINGS_MODULE=jr2.settings_production` (`manage.py check --deploy` is clean).

Everything of jr2/settings.py, and: no debug pages; the secret key and the allowed hosts from the environment (the
process refuses to start without them); cookies only over HTTPS; HSTS; HTTP redirected to HTTPS (off with
JR2_SSL_REDIRECT=0 when the proxy does it); behind a proxy (JR2_BEHIND_PROXY=1) its X-Forwarded-Proto says whether
the request came over HTTPS, and the client's address is the last of X-Forwarded-For. The Content-Security-Policy,
the rate limits and the cache are the base settings' (all environment variables).
"""

import os

from django.core.exceptions import ImproperlyConfigured

from jr2.settings import *  # noqa: F403 - the base settings, then what production changes
from jr2.settings import JR2_BEHIND_PROXY


def _required(name: str, what: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ImproperlyConfigured(f"{name} is not set: production needs {what}")
    return value


def _flag(name: str, default: str) -> bool:
    return os.environ.get(name, default) == "1"


DEBUG = False
# Production never makes a user on its own: `jr2 manage createsuperuser`, then `jr2 login-link`.
JR2_FIRST_USER = False
SECRET_KEY = _required(
    "JR2_SECRET_KEY",
    "a secret key of 50 or more random characters (python -c 'import secrets; print(secrets.token_urlsafe(64))')",
)
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("jr2-dev-only"):
    raise ImproperlyConfigured(
        "JR2_SECRET_KEY is too weak: give 50 or more random characters (python -c 'import "
        "secrets; print(secrets.token_urlsafe(64))')"
    )
ALLOWED_HOSTS = [
    h.strip()
    for h in _required("JR2_ALLOWED_HOSTS", "the host names it serves, comma-separated (jr2.example.org)").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("JR2_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

SECURE_HSTS_SECONDS = int(os.environ.get("JR2_HSTS_SECONDS", str(365 * 24 * 3600)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("JR2_HSTS_SUBDOMAINS", "1")
SECURE_HSTS_PRELOAD = _flag("JR2_HSTS_PRELOAD", "1")
SECURE_SSL_REDIRECT = _flag("JR2_SSL_REDIRECT", "1")
if JR2_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
