"""The production settings (`DJANGO_SETTINGS_MODULE=jr2.settings_production`): `manage.py check --deploy` is clean,
the process refuses to start without a strong secret key and the allowed hosts, and a live `jr2 up` under them
sends the security headers, secure cookies, HSTS, and redirects plain HTTP to HTTPS (behind a proxy: by its
X-Forwarded-Proto)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_server import ROOT, LiveServer, served
from tests.security.conftest import PASSWORD, ROLES, csrf_of

KEY = secrets.token_urlsafe(64)
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "jr2.settings_production",
    "JR2_SECRET_KEY": KEY,
    "JR2_ALLOWED_HOSTS": "127.0.0.1,localhost",
}
HTTPS = {"X-Forwarded-Proto": "https"}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("JR2_") and k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**base, **env},
        text=True,
        capture_output=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_the_production_settings() -> None:
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_finds_the_development_settings_unfit() -> None:
    done = manage("check", "--deploy", "--fail-level", "WARNING", env={})
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W009", "security.W012", "security.W016"):
        assert warning in done.stderr + done.stdout, warning
    assert "security.W018" not in done.stderr + done.stdout, "DEBUG is off unless asked for"
    debug = manage("check", "--deploy", "--fail-level", "WARNING", env={"JR2_DEBUG": "1"})
    assert "security.W018" in debug.stderr + debug.stdout


@pytest.mark.parametrize(
    "missing,words",
    [
        ("JR2_SECRET_KEY", "JR2_SECRET_KEY is not set"),
        ("JR2_ALLOWED_HOSTS", "JR2_ALLOWED_HOSTS is not set"),
    ],
)
def test_production_refuses_to_start_without_its_secrets(missing: str, words: str) -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != missing}
    done = manage("check", env=env)
    assert done.returncode != 0 and words in done.stderr, done.stderr[-500:]


def test_production_refuses_a_weak_secret_key() -> None:
    done = manage("check", env={**PRODUCTION, "JR2_SECRET_KEY": "short"})
    assert done.returncode != 0 and "JR2_SECRET_KEY is too weak" in done.stderr, done.stderr[-500:]


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """`jr2 up` under the production settings behind a (pretend) proxy: X-Forwarded-Proto says HTTPS. The proxy
    redirects plain HTTP itself (JR2_SSL_REDIRECT=0), so the test server's readiness probe gets its 200."""
    with served(
        tmp_path_factory.mktemp("production"),
        {**PRODUCTION, "JR2_BEHIND_PROXY": "1", "JR2_SSL_REDIRECT": "0"},
        users=ROLES,
        password=PASSWORD,
    ) as server:
        yield server


@pytest.mark.parametrize(
    "env,headers,expected",
    [
        ({}, {}, "301 https://127.0.0.1/accounts/login/"),
        ({"JR2_BEHIND_PROXY": "1"}, {"HTTP_X_FORWARDED_PROTO": "https"}, "200 -"),
        ({"JR2_BEHIND_PROXY": "1"}, {"HTTP_X_FORWARDED_PROTO": "http"}, "301 https://127.0.0.1/accounts/login/"),
        ({"JR2_SSL_REDIRECT": "0"}, {}, "200 -"),
    ],
    ids=["direct", "proxy-https", "proxy-http", "redirect-off"],
)
def test_plain_http_is_redirected_to_https(
    tmp_path: Path, env: dict[str, str], headers: dict[str, str], expected: str
) -> None:
    done = manage(
        "shell",
        "-c",
        "from django.test import Client\n"
        f"r = Client().get('/accounts/login/', HTTP_HOST='127.0.0.1', **{headers!r})\n"
        "print(r.status_code, r.get('Location', '-'))",
        env={**PRODUCTION, "JR2_SQLITE_PATH": str(tmp_path / "db.sqlite3"), **env},
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.strip().splitlines()[-1] == expected


def test_every_response_carries_the_security_headers(production: LiveServer) -> None:
    for url in ["/accounts/login/", "/api/openapi.json", "/api/runs", "/api/docs", "/nowhere/"]:
        got = httpx.get(f"{production.url}{url}", headers=HTTPS)
        headers = got.headers
        policy = headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy, url
        assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy, url
        assert headers.get("strict-transport-security") == "max-age=31536000; includeSubDomains; preload", url
        assert headers.get("x-frame-options") == "DENY" and headers.get("x-content-type-options") == "nosniff", url
        assert headers.get("referrer-policy") == "same-origin", url
    assert "Traceback" not in httpx.get(f"{production.url}/nowhere/", headers=HTTPS).text


def test_cookies_are_secure_httponly_and_samesite(production: LiveServer) -> None:
    with httpx.Client(base_url=production.url, headers=HTTPS, timeout=30) as client:
        page = client.get("/accounts/login/")
        csrf_cookie = page.headers["set-cookie"]
        assert "Secure" in csrf_cookie and "SameSite=Lax" in csrf_cookie, csrf_cookie
        token = csrf_of(page.text)
        # httpx keeps no Secure cookie over http: send it back as the browser (on HTTPS) would.
        client.cookies.set("csrftoken", csrf_cookie.split(";")[0].split("=", 1)[1], domain="127.0.0.1")
        done = client.post(
            "/accounts/login/",
            data={"username": "operator", "password": PASSWORD, "csrfmiddlewaretoken": token, "next": "/"},
            headers={"Origin": "https://127.0.0.1:" + str(production.port), **HTTPS},
        )
    assert done.status_code == 302, done.text[:500]
    session = [c for c in done.headers.get_list("set-cookie") if c.startswith("sessionid=")]
    assert session and all(f in session[0] for f in ("Secure", "HttpOnly", "SameSite=Lax")), session


def test_the_production_api_still_answers_with_a_token(production: LiveServer) -> None:
    with production.client() as client:
        got = client.get("/api/runs", headers=HTTPS)
    assert got.status_code == 200 and got.json()["count"] == 0
