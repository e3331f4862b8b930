"""Rate limits on the login form and on API tokens (429 with Retry-After, on a live `jr2 up` with small limits),
and how tokens are kept: hashed, never in clear, found by prefix and compared in constant time."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import httpx
import pytest

from tests.databases import all_rows, server_database
from tests.live_server import LiveServer, served
from tests.security.conftest import PASSWORD, ROLES, csrf_of


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(
        tmp_path_factory.mktemp("limits"),
        {"JR2_RATE_LOGIN": "3/300", "JR2_RATE_TOKEN": "4/300"},
        users=ROLES,
        password=PASSWORD,
    ) as server:
        yield server


def attempt(server: LiveServer, username: str, password: str) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        page = client.get("/accounts/login/")
        return client.post(
            "/accounts/login/",
            data={"username": username, "password": password, "next": "/", "csrfmiddlewaretoken": csrf_of(page.text)},
            headers={"Referer": server.url},
        )


def test_failed_logins_are_limited_with_429_and_retry_after_even_for_the_right_password(limited: LiveServer) -> None:
    for _ in range(3):
        assert attempt(limited, "operator", "wrong").status_code == 200, "a failed login shows the form again"
    blocked = attempt(limited, "operator", PASSWORD)
    assert blocked.status_code == 429, blocked.text[:300]
    assert 0 < int(blocked.headers["Retry-After"]) <= 300
    assert "Too many failed logins" in blocked.text
    assert "sessionid" not in blocked.cookies, "no session for a blocked login"


def test_wrong_tokens_are_limited_per_address_with_429_and_retry_after(limited: LiveServer) -> None:
    with limited.client("jr2_" + "w" * 43) as wrong:
        for _ in range(4):
            assert wrong.get("/api/runs").status_code == 401
        refused = wrong.get("/api/runs")
    assert refused.status_code == 429 and refused.headers["content-type"].startswith("application/json")
    assert 0 < int(refused.headers["Retry-After"]) <= 300
    assert "too many calls with a wrong API token" in refused.json()["detail"]
    with limited.client() as right:
        assert right.get("/api/runs").status_code == 429, "the address is blocked, whatever token it sends now"


def test_tokens_are_stored_hashed_and_never_in_clear(site: LiveServer) -> None:
    key = site.token
    with server_database(site) as conn:
        rows = conn.execute("SELECT prefix, key_hash FROM engine_apitoken").fetchall()
    dump = repr(all_rows(site))
    assert (key[:10], hashlib.sha256(key.encode()).hexdigest()) in rows
    assert key not in dump and key[10:] not in dump, "the token is in the database in clear"


def test_a_token_with_a_known_prefix_but_another_secret_is_refused(site: LiveServer) -> None:
    """The record is found by the prefix; only the constant-time comparison of the hashes can refuse this one."""
    forged = site.token[:10] + ("A" if site.token[10] != "A" else "B") + site.token[11:]
    with site.client(forged) as client:
        assert client.get("/api/runs").status_code == 401
    with site.client() as client:
        assert client.get("/api/runs").status_code == 200


def test_the_token_check_compares_hashes_in_constant_time() -> None:
    """Read in the source, as a timing test on a shared machine would prove nothing: the lookup is by prefix and the
    secret's hash is compared with hmac.compare_digest, never with == or a database filter on the hash. (A token
    checked a moment ago is found again by its SHA-256 digest in the process's memory, engine/web/tokens.py: a
    lookup keyed by the hash of what the caller sent, which tells a guesser nothing about a real key.)"""
    import inspect

    from engine.web import tokens
    from engine.web.api import TokenAuth

    source = inspect.getsource(tokens.look_up)
    assert "hmac.compare_digest(" in source and "prefix=" in source and "key_hash=" not in source
    assert "tokens.look_up" in inspect.getsource(TokenAuth.authenticate)
