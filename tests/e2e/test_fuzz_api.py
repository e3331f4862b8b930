"""The JSON API fuzzed with schemathesis against the OpenAPI document of a live `jr2 up` (issue 9, "An API fuzz").

Every operation of /api/openapi.json, with requests that follow its schema and requests that break it, sent with
an operator's token, an observer's (no permission), a revoked or made-up token, or none. Real values are mixed in
(the example workflows' names, runs waiting at a Gate, a finished run, their Gate ids, valid doors), so the fuzz
reaches the code behind the 404s. For every response:

- never a 500 (schemathesis' `not_a_server_error`);
- the status, content type, headers and body are those the document declares for the operation;
- a refused request (4xx) changes nothing in the database: every table is compared before and after, less the
  columns that move by themselves (a lease's expiry, a token's last use).

Each operation is fuzzed in both modes for each caller: an operator, an observer, nobody, a wrong token (revoked,
made up, or any text in the Authorization header).
`JR2_FUZZ_EXAMPLES` sets the examples per operation, mode and caller (default 5: about a minute in the normal
suite); the figures of a long run are in docs/reliability.md ("API fuzz").
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.parameters import ParameterLocation as Location

from engine.web.api import api
from tests.databases import all_rows
from tests.live_server import LiveServer, make_server

EXAMPLES = int(os.environ.get("JR2_FUZZ_EXAMPLES", "5"))
#: (method, path) of every operation in the document, read in-process at collection; the test reads the live one.
DOCUMENT = api.get_openapi_schema()
OPERATIONS = [(method.upper(), path) for path, ops in DOCUMENT["paths"].items() for method in ops]
#: Columns that change while nothing is asked: lease renewals, and a token's last use (a refused call with a valid
#: token still used it).
VOLATILE = {("engine_run", "lease_expires"), ("engine_run", "lease_owner"), ("engine_apitoken", "last_used_at")}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
DOORS = {
    "notes": {"changes": "One fix.\nA dark theme."},
    "triage": {"title": "Crash on save", "body": "It crashes when I save."},
    "code_review": {"task": "Add a docstring to add()."},
}
GATE_ANSWERS = [
    {"type": "reply", "text": "Everyone"},
    {"type": "confirm"},
    {"type": "withdraw", "reason": "dup"},
    {"type": "label", "label": "bug", "reason": "a crash"},
    {"type": "label", "label": "nonsense"},
    {"type": "reply"},
    {"type": "reply", "text": 3, "sender": {"party": "gate", "id": "x"}},
]


#: The statuses the fuzz got, by operation; printed at the end of the module (run with -s to see them).
STATUSES: Counter[str] = Counter()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # Wrong tokens are part of the fuzz: a limit they never reach (tests/security test the limit itself).
    live = make_server(tmp_path_factory.mktemp("fuzz"), {"JR2_LEASE_SECONDS": "15", "JR2_RATE_TOKEN": "1000000/60"})
    try:
        yield live
    finally:
        live.stop()
        total = sum(STATUSES.values())
        by = Counter(" ".join(k.split()[-3:]) for k in STATUSES.elements())
        print(f"\nAPI fuzz: {total} requests; by mode, caller and status: {dict(sorted(by.items()))}")


@pytest.fixture(scope="module")
def tokens(server: LiveServer) -> dict[str, str | None]:
    """Who calls: an operator (every permission), an observer (none), a revoked token, a made-up one, nobody."""
    server.add_users({"observer": []})
    reader = server.new_token("observer")
    revoked = server.new_token("e2e", "--name", "revoked")
    gone = server.jr2("token", "revoke", revoked[:10])
    assert gone.returncode == 0, gone.stdout + gone.stderr
    return {
        "operator": server.token,
        "observer": reader,
        "revoked": revoked,
        "made-up": "jr2_" + "x" * 43,
        "nobody": None,
    }


@pytest.fixture(scope="module")
def known(server: LiveServer) -> dict[str, list[str]]:
    """Real path values: workflow names, runs in each state (waiting at a Gate, finished), their Gate ids."""
    runs = [server.start_run(workflow, DOORS[workflow]) for workflow in ("notes", "triage")]
    for run_id in runs:
        server.wait_for(run_id, "waiting")
    ended = server.start_run("notes", DOORS["notes"], "waiting")
    with server.client() as client:
        assert client.post(f"/api/runs/{ended}/cancel").status_code == 200
    return {
        "name": ["notes", "triage", "code_review", "nope"],
        "run_id": [*runs, ended],
        "gate": ["writing.asking", "desk", "writing", "nope"],
    }


@pytest.fixture(scope="module")
def schema(server: LiveServer) -> Any:
    """The live document, less its security declarations: the callers' headers are this test's (so a negative
    case breaks the path, the query or the body, not the Authorization header schemathesis would make)."""
    raw = httpx.get(f"{server.url}/api/openapi.json").json()
    raw.get("components", {}).pop("securitySchemes", None)
    for ops in raw["paths"].values():
        for op in ops.values():
            op.pop("security", None)
    loaded = schemathesis.openapi.from_dict(raw)
    loaded.config.update(base_url=server.url)
    return loaded


def test_the_live_document_is_the_one_the_fuzz_was_collected_from_and_has_no_duplicate_key(server: LiveServer) -> None:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"duplicate keys in the document: {keys}"
        return dict(pairs)

    live = json.loads(httpx.get(f"{server.url}/api/openapi.json").text, object_pairs_hook=unique)
    assert [(m.upper(), p) for p, ops in live["paths"].items() for m in ops] == OPERATIONS
    for path, ops in live["paths"].items():
        for method, op in ops.items():
            assert op["responses"]["429"]["headers"]["Retry-After"]["required"], (method, path)
    for name, declared in live["components"]["schemas"].items():
        missing = set(declared.get("required", ())) - set(declared.get("properties", {}))
        assert not missing, f"{name} requires {missing}, which it does not declare (an alias named two ways?)"


# -- the database, before and after ----------------------------------------------------------------------------


def database(server: LiveServer) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (less VOLATILE columns) of the server's database, SQLite or PostgreSQL, read-only."""
    return all_rows(server, VOLATILE)


def quiet(server: LiveServer, timeout: float = 60) -> dict[str, list[tuple[Any, ...]]]:
    """The database once no run is running (each waits on a Gate or has ended) and two reads agree."""
    deadline = time.monotonic() + timeout
    last = database(server)
    while True:
        time.sleep(0.05)
        now = database(server)
        running = [r for r in now.get("engine_run", []) if "running" in r]
        if now == last and not running:
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"the server did not settle within {timeout} s: {running}")
        last = now


def changed(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> dict[str, Any]:
    return {
        t: {
            "before": [r for r in before.get(t, []) if r not in after.get(t, [])],
            "after": [r for r in after.get(t, []) if r not in before.get(t, [])],
        }
        for t in sorted(set(before) | set(after))
        if before.get(t) != after.get(t)
    }


# -- the fuzz ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("caller", ["operator", "observer", "nobody", "wrong"])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("method,path", OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_fuzz(
    server: LiveServer,
    schema: Any,
    tokens: dict[str, str | None],
    known: dict[str, list[str]],
    method: str,
    path: str,
    mode: GenerationMode,
    caller: str,
) -> None:
    declared = DOCUMENT["paths"][path][method.lower()]
    breakable = "requestBody" in declared or any(p["in"] != "path" for p in declared.get("parameters", []))
    if mode is GenerationMode.NEGATIVE and not breakable:
        pytest.skip(
            f"{method} {path} takes nothing a request could break (no body, no query; any path text is a string)"
        )
    operation = schema[path][method]
    db = server

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
    )
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
        who = (
            data.draw(st.sampled_from(["revoked", "made-up", "garbage"]), label="wrong")
            if caller == "wrong"
            else caller
        )
        headers = dict(case.headers or {})
        if who == "garbage":
            # Any header text (without the outer blanks HTTP clients refuse to send) but U+0085: daphne's HTTP
            # parser (Twisted) takes it for a line break and answers 400 in HTML itself, before the request reaches
            # jr2 (docs/reliability.md).
            headers["Authorization"] = data.draw(
                st.text(st.characters(min_codepoint=32, max_codepoint=255, exclude_characters="\x85"), max_size=80).map(
                    str.strip
                ),
                label="garbage",
            )
        elif tokens[who] is not None:
            headers["Authorization"] = f"Bearer {tokens[who]}"
        before = quiet(db)
        response = case.call(base_url=server.url, headers=headers, timeout=60)
        STATUSES[f"{method} {path} {mode.value} {who} {response.status_code}"] += 1
        checks = CHECKS + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])
        case.validate_response(response, checks=checks, headers=headers)
        if 400 <= response.status_code < 500:
            after = database(db)
            assert after == before, (
                f"{method} {case.formatted_path} as {who} was refused "
                f"({response.status_code}: {response.text[:300]}) but the database changed: "
                f"{changed(before, after)}"
            )

    one()
