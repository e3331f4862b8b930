"""The database work of the API's hot path, counted: what one start of a run and one Gate answer cost in queries, the
web edge's own (the token, the permissions, the reads the views make) apart from the host's (its steps). Ceilings
that fail when the path does work twice or needlessly again: a token read and written on every call, a permission
read per call, the Run row read again after the step to give its status, or read before an answer while the run's
driver holds it.

Counted on every connection the calls use (the requests' threads and the host's database thread), each query put to
the web edge when it comes from engine/web or from a request's thread, to the test when from its own polls, to the
relay when the relay makes it apart from a step's transaction, else to the host. The speed is measured in
bench/fleet_load.py (docs/benchmarks.md, "A lean HTTP path"), never here."""

from __future__ import annotations

import threading
import traceback
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db.backends.signals import connection_created
from django.test import AsyncClient

from engine.models import ApiToken
from engine.runtime.host import Host
from tests.runtime.hosting import hosted, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = 10
#: The web edge's queries per start and per answer, beside the token's lookup: none. The run's status after a start
#: or an answer, and the run an answer is checked against (its view: the open Gates, who may answer), are what its
#: driver in this process last committed, not read back from the Run row.
WEB_PER_START, WEB_PER_ANSWER = 0, 0
#: The relay's own statements per answer, apart from the step's transaction: none on the embedded path, which reads
#: no status first (its driver here holds the lease: the run is live) and writes the answer's row in the
#: transaction of the step it causes, not in one of its own before it.
RELAY_PER_ANSWER = 0
#: The one lookup of the token (the token with its user, the user's and their groups' permissions) and the one
#: write of its `last_used_at`, for all the calls.
LOOKUP = 4


class Queries:
    """Every query on every connection opened while counting, by where it came from (web or host)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        frames = traceback.extract_stack()[:-1]  # not this wrapper
        files = [frame.filename for frame in frames]
        if any("/tests/" in f for f in files):
            where = "test"  # the test's own polls of the database
        elif not threading.current_thread().name.startswith("jr2-db") or any("/engine/web/" in f for f in files):
            where = "web"
        elif not context["connection"].in_atomic_block and any(
            frame.filename.endswith("/engine/runtime/relay.py") or frame.name == "post_input" for frame in frames
        ):
            where = "relay"  # the relay's own statements, apart from the step's transaction
        else:
            where = "host"
        with self.lock:
            self.counts[where] += 1
        return execute(sql, params, many, context)

    def hook(self, sender: Any, connection: Any, **kwargs: Any) -> None:
        connection.execute_wrappers.append(self)

    def take(self) -> Counter[str]:
        with self.lock:
            taken, self.counts = self.counts, Counter()
        return taken


@pytest.fixture
def queries(settings: Any) -> Iterator[Queries]:
    settings.JR2_SCRIPTED = True
    counted = Queries()
    connection_created.connect(counted.hook)
    try:
        yield counted
    finally:
        connection_created.disconnect(counted.hook)


def caller() -> str:
    user = User.objects.create_user("caller")
    user.user_permissions.add(*Permission.objects.filter(codename__in=["start_run", "answer_gate"]))
    return ApiToken.issue(user)[1]


def test_a_start_and_a_gate_answer_through_the_api_make_no_query_twice(queries: Queries) -> None:
    key = caller()

    async def body(host: Host) -> None:
        client, auth = AsyncClient(), {"Authorization": f"Bearer {key}"}
        queries.take()
        run_ids = []
        for i in range(RUNS):
            created = await client.post(
                "/api/workflows/notes/runs", {"changes": f"Fix {i}."}, "application/json", headers=auth
            )
            assert created.status_code == 201, created.content
            run_ids.append(created.json()["id"])
        for run_id in run_ids:
            await until(host, status(run_id, "waiting"), what=f"run {run_id} at its Gate")
        starting = queries.take()
        for run_id in run_ids:
            answered = await client.post(
                f"/api/runs/{run_id}/gates/writing.asking/events",
                {"type": "reply", "text": "Admins."},
                "application/json",
                headers=auth,
            )
            assert answered.status_code == 200 and answered.json()["outcome"] == "delivered", answered.content
        for run_id in run_ids:
            await until(host, status(run_id, "done"), what=f"run {run_id} done")
        answering = queries.take()
        # what the counts were, for docs/benchmarks.md ("A lean HTTP path"), shown with -s
        print(f"\nqueries per start: {dict(starting)} / {RUNS}; per answer: {dict(answering)} / {RUNS}")
        assert starting["web"] <= RUNS * WEB_PER_START + LOOKUP, starting
        assert answering["web"] <= RUNS * WEB_PER_ANSWER, answering
        assert answering["relay"] <= RUNS * RELAY_PER_ANSWER, answering

    hosted({"notes": notes.machine}, body)
