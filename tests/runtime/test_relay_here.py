"""The embedded path of relayed inputs (engine/runtime/relay.py, `deliver_here`): a Gate answer sent in the process
that drives the run has its RunInput row written in the transaction of the step it causes, delivered or refused
with the run's words; one whose sender stops waiting is kept pending first, told 202-style (InputPending), and
delivered once, in order; nothing is written for one that never reaches a commit."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections
from django.db.backends.signals import connection_created

from engine.models import JournalEntry, RunInput
from engine.runtime import relay
from engine.runtime.errors import InputPending
from engine.runtime.host import Host
from tests.runtime.hosting import NOTES_DOOR, NOTES_GATE, hosted, scripted, status, until  # noqa: F401 - scripted is a fixture
from workflows import notes

#: Every test on the database, the notes workflow's scripted writer playing (`scripted`, imported above).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("scripted")]


class InputWrites:
    """Every INSERT into the inputs' table on any connection, with whether it ran inside a transaction."""

    def __init__(self) -> None:
        self.inserts: list[bool] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip().upper().startswith("INSERT") and RunInput._meta.db_table in sql:
            self.inserts.append(context["connection"].in_atomic_block)
        return execute(sql, params, many, context)

    def hook(self, sender: Any, connection: Any, **kwargs: Any) -> None:
        connection.execute_wrappers.append(self)


@pytest.fixture
def input_writes() -> Iterator[InputWrites]:
    watched = InputWrites()
    connection_created.connect(watched.hook)
    for open_one in connections.all(initialized_only=True):
        open_one.execute_wrappers.append(watched)
    try:
        yield watched
    finally:
        connection_created.disconnect(watched.hook)
        if watched in connection.execute_wrappers:
            connection.execute_wrappers.remove(watched)


async def at_gate(host: Host) -> str:
    run_id = await host.start_run("notes", NOTES_DOOR)
    await until(host, status(run_id, "waiting"), what="the run at its Gate")
    return run_id


def rows(run_id: str) -> list[tuple[str, str, str]]:
    return list(RunInput.objects.filter(run_id=run_id).order_by("id").values_list("kind", "status", "reason"))


def gate_entries(run_id: str) -> int:
    return JournalEntry.objects.filter(run_id=run_id, kind="gate").count()


def test_a_gate_answer_here_is_written_with_its_step_in_one_transaction(input_writes: InputWrites) -> None:
    async def body(host: Host) -> None:
        run_id = await at_gate(host)
        input_writes.inserts.clear()
        input_id, delivery = await host.send_input(
            run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Admins."}, by="ann"
        )
        assert delivery.outcome == "delivered"
        assert input_writes.inserts == [True]  # one INSERT, inside the step's transaction: no commit of its own
        assert await host.db(rows, run_id) == [("gate", "delivered", "")]
        assert input_id == await host.db(lambda: RunInput.objects.get(run_id=run_id).id)
        assert await host.db(lambda: RunInput.objects.get(run_id=run_id).sent_by) == "ann"
        await until(host, status(run_id, "done"), what="the run done")

    hosted({"notes": notes.machine}, body)


def test_a_gate_answer_the_run_refuses_is_kept_refused_with_its_words() -> None:
    async def body(host: Host) -> None:
        run_id = await at_gate(host)
        delivery = await host.deliver(run_id, "gate", gate=NOTES_GATE, event="no-such-event", params={})
        assert delivery.outcome == "refused"
        [(kind, state, reason)] = await host.db(rows, run_id)
        assert (kind, state) == ("gate", "refused") and "no-such-event" in reason
        assert await host.db(gate_entries, run_id) == 0
        assert (await host.db(status(run_id, "waiting"))) is not None

    hosted({"notes": notes.machine}, body)


def test_an_answer_whose_sender_stops_waiting_is_kept_pending_and_delivered_once(settings: Any) -> None:
    settings.JR2_RELAY_WAIT = 0.0  # the sender is told "kept" before the step can commit

    async def body(host: Host) -> None:
        run_id = await at_gate(host)
        with pytest.raises(InputPending) as pending:
            await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Admins."}, by="ann")
        input_id = pending.value.input_id
        assert await host.db(lambda: RunInput.objects.filter(id=input_id, run_id=run_id).exists())
        await until(host, status(run_id, "done"), what="the run done")
        await until(
            host,
            lambda: RunInput.objects.filter(id=input_id, status="delivered").exists(),
            what="the kept answer delivered",
        )
        assert await host.db(rows, run_id) == [("gate", "delivered", "")]
        assert await host.db(gate_entries, run_id) == 1  # the host's rounds saw it pending, and did not apply it again

    hosted({"notes": notes.machine}, body, scan_seconds=0.01)


def test_a_row_kept_pending_before_its_step_is_settled_by_that_step_and_taken_once() -> None:
    async def body(host: Host) -> None:
        run_id = await at_gate(host)
        driver = host.drivers[run_id]
        keeping = relay.Keeping(
            run_id, "gate", {"gate": NOTES_GATE, "event": "reply", "params": {"text": "Ann."}}, "ann"
        )
        placeholder = asyncio.get_running_loop().create_future()
        row_id = await host.db(relay.keep_pending, keeping, driver, placeholder)  # its sender stopped waiting
        assert await host.db(rows, run_id) == [("gate", "pending", "")]
        await asyncio.sleep(0.1)  # the host's rounds (every 10 ms) find the row pending: taken already
        future = driver.keep_here(keeping)
        assert future is not None
        delivery = await future
        assert delivery.outcome == "delivered"
        assert await host.db(lambda: RunInput.objects.get(id=row_id).status) == "delivered"
        await until(host, status(run_id, "done"), what="the run done")
        assert await host.db(rows, run_id) == [("gate", "delivered", "")]
        assert await host.db(gate_entries, run_id) == 1

    hosted({"notes": notes.machine}, body, scan_seconds=0.01, park_seconds=-1)  # reads its live driver
