"""The JSON API fuzzed with schemathesis against the OpenAPI document of a live `jr2 up` (issue 9, "An API fuzz").

Every operation of /api/openapi.json, with requests that follow its schema and requests that break it, sent with
an operator's token, an observer's (no permission), a revoked or made-up token, or none. Real values are mixed in
(the example workflows' names, runs waiting at a Gate, a finished run, their Gate ids, valid doors), so the fuzz
reaches the code behind the 404s. For every response:

- never a 500 (schemathesis' `not_a_server_error`);
- the status, content type, headers and body are those the document declares for the operation;
- a refused request (4xx) changes nothing in the database: every table is compared before and after, less the
  columns that move by themselves (a lease's expiry, a token's last use).

`JR2_FUZZ_EXAMPLES` sets the examples per operation (default 12: about a minute in the normal suite); the figures
of a long run are in docs/reliability.md ("API fuzz").
"""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.parameters import ParameterLocation as Location
from schemathesis.checks import (content_type_conformance, negative_data_rejection, not_a_server_error,
                                 response_headers_conformance, response_schema_conformance, status_code_conformance)

from engine.api import api
from tests.e2e.conftest import ROOT, LiveServer, make_server

EXAMPLES = int(os.environ.get("JR2_FUZZ_EXAMPLES", "12"))
#: (method, path) of every operation in the document, read in-process at collection; the test reads the live one.
OPERATIONS = [(method.upper(), path) for path, ops in api.get_openapi_schema()["paths"].items() for method in ops]
#: Columns that change while nothing is asked: lease renewals, and a token's last use (a refused call with a valid
#: token still used it).
VOLATILE = {("engine_run", "lease_expires"), ("engine_run", "lease_owner"), ("engine_apitoken", "last_used_at")}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
DOORS = {"notes": {"changes": "One fix.\nA dark theme."},
         "triage": {"title": "Crash on save", "body": "It crashes when I save."},
         "code_review": {"task": "Add a docstring to add()."}}
GATE_ANSWERS = [{"type": "reply", "text": "Everyone"}, {"type": "confirm"}, {"type": "withdraw", "reason": "dup"},
                {"type": "label", "label": "bug", "reason": "a crash"}, {"type": "label", "label": "nonsense"},
                {"type": "reply"}, {"type": "reply", "text": 3, "sender": {"party": "gate", "id": "x"}}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # Wrong tokens are part of the fuzz: a limit they never reach (tests/security test the limit itself).
    live = make_server(tmp_path_factory.mktemp("fuzz"), {"JR2_LEASE_SECONDS": "15", "JR2_RATE_TOKEN": "1000000/60"})
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def tokens(server: LiveServer) -> dict[str, str | None]:
    """Who calls: an operator (every permission), an observer (none), a revoked token, a made-up one, nobody."""
    observer = _manage(server, "from django.contrib.auth import get_user_model\n"
                               "get_user_model().objects.create_user('observer')")
    assert observer.returncode == 0, observer.stderr
    reader = server.jr2("token", "create", "observer")
    assert reader.returncode == 0, reader.stderr
    revoked = server.jr2("token", "create", "e2e", "--name", "revoked")
    assert revoked.returncode == 0, revoked.stderr
    gone = server.jr2("token", "revoke", revoked.stdout.strip()[:10])
    assert gone.returncode == 0, gone.stdout + gone.stderr
    return {"operator": server.token, "observer": reader.stdout.strip(), "revoked": revoked.stdout.strip(),
            "made-up": "jr2_" + "x" * 43, "nobody": None}


def _manage(server: LiveServer, code: str) -> Any:
    import subprocess
    import sys
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), "shell", "-c", code], cwd=server.folder,
                          env=server.env, text=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def known(server: LiveServer) -> dict[str, list[str]]:
    """Real path values: workflow names, runs in each state (waiting at a Gate, finished), their Gate ids."""
    runs: list[str] = []
    with server.client() as client:
        for workflow in ("notes", "triage"):
            created = client.post(f"/api/workflows/{workflow}/runs", json=DOORS[workflow])
            assert created.status_code == 201, created.text
            runs.append(created.json()["id"])
        for run_id in runs:
            server.wait_for(run_id, "waiting")
        ended = client.post("/api/workflows/notes/runs", json=DOORS["notes"]).json()["id"]
        server.wait_for(ended, "waiting")
        assert client.post(f"/api/runs/{ended}/cancel").status_code == 200
    return {"name": ["notes", "triage", "code_review", "nope"], "run_id": [*runs, ended],
            "gate": ["writing.asking", "desk", "writing", "nope"]}


@pytest.fixture(scope="module")
def schema(server: LiveServer) -> Any:
    return schemathesis.openapi.from_url(f"{server.url}/api/openapi.json")


def test_the_live_document_is_the_one_the_fuzz_was_collected_from(server: LiveServer) -> None:
    live = httpx.get(f"{server.url}/api/openapi.json").json()
    assert [(m.upper(), p) for p, ops in live["paths"].items() for m in ops] == OPERATIONS


# -- the database, before and after ----------------------------------------------------------------------------

def database(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (less VOLATILE columns), read-only."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        found = {}
        for table in tables:
            columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")') if (table, r[1]) not in VOLATILE]
            quoted = ", ".join(f'"{c}"' for c in columns)
            found[table] = conn.execute(f'SELECT {quoted} FROM "{table}" ORDER BY rowid').fetchall()
    return found


def quiet(path: Path, timeout: float = 60) -> dict[str, list[tuple[Any, ...]]]:
    """The database once no run is running (each waits on a Gate or has ended) and two reads agree."""
    deadline = time.monotonic() + timeout
    last = database(path)
    while True:
        time.sleep(0.05)
        now = database(path)
        running = [r for r in now.get("engine_run", []) if "running" in r]
        if now == last and not running:
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"the server did not settle within {timeout} s: {running}")
        last = now


def changed(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> dict[str, Any]:
    return {t: {"before": [r for r in before.get(t, []) if r not in after.get(t, [])],
                "after": [r for r in after.get(t, []) if r not in before.get(t, [])]}
            for t in sorted(set(before) | set(after)) if before.get(t) != after.get(t)}


# -- the fuzz ------------------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("method,path", OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_fuzz(server: LiveServer, schema: Any, tokens: dict[str, str | None], known: dict[str, list[str]],
              method: str, path: str, mode: GenerationMode) -> None:
    operation = schema[path][method]
    db = server.folder / "db.sqlite3"

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.function_scoped_fixture])
    @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
    def one(case: Any, data: st.DataObject) -> None:
        # Real values replace generated ones only where the case follows the schema: a negated part stays as
        # generated, so the request still breaks the schema where schemathesis meant it to.
        negated = {loc for loc in Location if case.meta is not None and case.meta.is_negative_at(loc)}
        if Location.PATH not in negated:
            for name in list(case.path_parameters or {}):
                if name in known and data.draw(st.booleans(), label=f"real {name}"):
                    case.path_parameters[name] = data.draw(st.sampled_from(known[name]), label=name)
        if Location.BODY not in negated and method == "POST":
            if path.endswith("/runs") and data.draw(st.booleans(), label="a valid door"):
                case.body = DOORS.get(case.path_parameters["name"], {"changes": "x"})
            if path.endswith("/events") and data.draw(st.booleans(), label="a Gate answer"):
                case.body = dict(data.draw(st.sampled_from(GATE_ANSWERS), label="answer"))
        headers = dict(case.headers or {})
        if Location.HEADER in negated:
            who = "generated"
        else:
            who = data.draw(st.sampled_from(sorted(tokens)), label="caller")
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            case.headers = dict(headers)
            if tokens[who] is not None:
                headers["Authorization"] = f"Bearer {tokens[who]}"
        before = quiet(db)
        response = case.call(base_url=server.url, headers=headers, timeout=60)
        checks = CHECKS + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])
        case.validate_response(response, checks=checks, headers=headers)
        if 400 <= response.status_code < 500:
            after = database(db)
            assert after == before, (f"{method} {case.formatted_path} as {who} was refused "
                                     f"({response.status_code}: {response.text[:300]}) but the database changed: "
                                     f"{changed(before, after)}")

    one()
