"""A host outlives its database connection: when PostgreSQL drops it (a restart, a failover, an administrator's
`pg_terminate_backend`), the host's database thread connects afresh at its next call instead of failing every call
for the rest of the process's life, and its runs go on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.db import DatabaseError, connection

from engine.core.outputs import Delivery
from engine.runtime.host import Host
from tests.databases import on_postgres
from tests.runtime.hosting import fleet, status, until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not on_postgres(),
        reason="PostgreSQL only: the suite's second pass (scripts/services run) sets it",
    ),
]


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def terminate(pid: int) -> None:
    """From a thread and connection of its own, which it closes: as an administrator would."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            assert cursor.fetchone()[0] is True
    finally:
        connection.close()


def test_hosts_whose_database_connections_were_dropped_reconnect_and_their_run_goes_on(settings: Any) -> None:
    """A web host (whose calls are single statements, outside any transaction) and a worker, both dropped."""
    settings.JR2_SCRIPTED = True

    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", {"changes": "Faster start-up."})
        await until(web, status(run_id, "waiting"))
        before = [await host.db(backend_pid) for host in (web, worker)]
        for pid in before:
            await asyncio.to_thread(terminate, pid)
        errors: list[str] = []
        for _ in range(3):  # the first call after the drop may be the one that finds it: it fails, named
            try:
                delivery = await web.deliver(
                    run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins"}
                )
                break
            except DatabaseError as err:
                errors.append(f"{type(err).__name__}: {err}")
                await asyncio.sleep(0.1)
        else:
            pytest.fail(f"the web host never reconnected: {errors}")
        assert isinstance(delivery, Delivery) and delivery.outcome == "delivered", delivery
        run = await until(web, status(run_id, "done"))
        assert "Admins" in run.output["notes"]
        after = [await host.db(backend_pid) for host in (web, worker)]
        assert not set(after) & set(before)

    fleet(body, "web", "worker")
