"""The host drives whole runs: scripted Agents through the Turn loop, Gates answered, Effects run, time passing,
cancel, and everything journaled in a real SQLite database before anyone is told."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from engine import agent, answer, define_event, jr2_setup, raise_, scripted
from engine.core.session import Session
from engine.models import EffectRecord, JournalEntry, ModelCall, Run, RunSnapshot, TurnMessage, TurnRecord
from engine.runtime.host import Host
from tests.runtime.hosting import hosted, status, until
from workflows import code_review, notes, triage

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up.\nA new export button."}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


def test_notes_runs_end_to_end_with_its_scripted_writer_and_a_gate_answer() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        run = await until(host, status(run_id, "waiting"))
        [gate] = run.view["gates"]
        assert gate["id"] == "writing.asking"
        assert gate["meta"] == {"question": "Who reads these notes, and what should they know first?"}
        delivery = await host.deliver(
            run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins of small teams"}
        )
        assert delivery.outcome == "delivered"
        run = await until(host, status(run_id, "done"))
        assert "- Faster start-up." in run.output["notes"] and "Admins of small teams" in run.output["notes"]

        def records() -> dict[str, Any]:
            return {
                "journal": list(JournalEntry.objects.filter(run_id=run_id).values_list("kind", flat=True)),
                "turns": list(
                    TurnRecord.objects.filter(run_id=run_id).values("model", "declared_model", "scripted", "status")
                ),
                "calls": ModelCall.objects.filter(run_id=run_id, status="done").count(),
                "messages": list(TurnMessage.objects.filter(run_id=run_id).values_list("kind", flat=True)),
                "snapshots": RunSnapshot.objects.filter(run_id=run_id).count(),
                "run": Run.objects.get(id=run_id),
            }

        found = await host.db(records)
        assert [k for k in found["journal"] if k != "advance"] == ["start", "pick", "gate", "pick"]
        assert found["turns"] == [
            {
                "model": "script/notes.writer",
                "declared_model": "anthropic/claude-haiku-5-5",
                "scripted": True,
                "status": "ended",
            }
        ]
        assert found["calls"] == 2
        assert found["messages"] == ["prompt", "reply", "tool_result", "reply", "tool_result"]
        assert found["snapshots"] == 1  # the start's: a resume starts there; none once the run ended
        assert found["run"].scripted and found["run"].seq == len(found["journal"])

    hosted({"notes": notes.machine}, body)


def test_the_journal_in_the_database_replays_to_the_same_end() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Everyone"})
        await until(host, status(run_id, "done"))
        journal = await host.db(lambda: [e.entry for e in JournalEntry.objects.filter(run_id=run_id)])
        replayed = Session.replay(notes.machine, journal)
        run = await host.db(lambda: Run.objects.get(id=run_id))
        assert replayed.status == "done" and replayed.output == run.output

    hosted({"notes": notes.machine}, body)


def test_a_wrong_gate_answer_is_refused_and_changes_nothing() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        before = await until(host, status(run_id, "waiting"))
        delivery = await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": 3})
        assert delivery.outcome == "refused" and "text" in delivery.error
        after = await host.db(lambda: Run.objects.get(id=run_id))
        assert after.seq == before.seq and after.status == "waiting"

    hosted({"notes": notes.machine}, body)


def test_code_review_runs_its_test_effect_for_real_and_finishes() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("code_review", {"task": "Add add()."})
        run = await until(host, status(run_id, "done", "failed"), timeout=60)
        assert run.status == "done", run.reason
        assert run.output["rounds"] == 1 and run.output["verdict"]
        effects = await host.db(
            lambda: list(EffectRecord.objects.filter(run_id=run_id).values("slot", "status", "attempts"))
        )
        assert effects == [
            {"slot": "checkout", "status": "done", "attempts": 1},
            *[{"slot": "tests", "status": "done", "attempts": 1}] * 2,
        ]
        kinds = await host.db(lambda: list(JournalEntry.objects.filter(run_id=run_id).values_list("kind", flat=True)))
        assert kinds.count("effect_started") == 3 and kinds.count("effect_done") == 3

    hosted({"code_review": code_review.machine}, body)


def test_triage_searches_then_the_desk_confirms() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("triage", {"title": "Export crash", "body": "It crashes on export."})
        run = await until(host, lambda: Run.objects.filter(id=run_id, view__value__triaging="proposed").first())
        assert run.status == "waiting"
        assert (await host.deliver(run_id, "gate", gate="desk", event="confirm", params={})).outcome == "delivered"
        run = await until(host, status(run_id, "done"))
        assert run.output == {"label": "bug", "labelled_by": "triager", "withdrawn": None}

    hosted({"triage": triage.machine}, body)


def test_cancel_ends_the_run_and_its_turns() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        await host.cancel(run_id)
        run = await until(host, status(run_id, "cancelled"))
        assert run.view["gates"] == [] and run.view["turns"] == []
        turns = await host.db(lambda: list(TurnRecord.objects.filter(run_id=run_id).values_list("status", flat=True)))
        assert turns == ["ended"]
        assert not host.holds(run_id)

    hosted({"notes": notes.machine}, body)


# -- time: real time reaches the Session as journaled advance inputs ------------------------------------------


class Empty(BaseModel):
    pass


class Note(BaseModel):
    text: str = Field(description="What to say.")


def timed_machine(delay: int = 300) -> Any:
    wait = define_event(name="wait", input=Empty, description="Wait a moment.")
    finish = define_event(name="finish", input=Note, description="Finish.")
    tick = define_event(name="tick", input=Empty, description="A tick.")
    return jr2_setup(
        events=[wait, finish, tick],
        actors={
            "sleeper": agent(model="script/sleeper", instructions="You wait, then finish."),
        },
    ).create_machine(
        {
            "id": "timed",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "sleeper", "input": {"prompt": "Wait once, then finish."}},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"wait": "pending"}},
                        "pending": {
                            "entry": raise_({"type": "tick"}, delay=delay),
                            "on": {"tick": {"target": "idle", "actions": answer(lambda: "tick came")}},
                        },
                    },
                },
                "done": {"type": "final"},
            },
            "output": lambda context: {"ok": True},
        }
    )


@scripted("sleeper")
def sleeper(turn: Any) -> Any:
    if not turn.answers:
        return ("wait", {})
    return ("finish", {"text": turn.answers[-1].splitlines()[0]})


def test_a_timer_fires_in_real_time_through_journaled_advances() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("timed", None)
        run = await until(host, status(run_id, "done"), timeout=5)
        assert run.output == {"ok": True}
        entries = await host.db(lambda: [e.entry for e in JournalEntry.objects.filter(run_id=run_id)])
        assert any(e["kind"] == "advance" and e["ms"] >= 1 for e in entries)
        replayed = Session.replay(timed_machine(), entries)
        assert replayed.status == "done"
        messages = await host.db(
            lambda: [m.content for m in TurnMessage.objects.filter(run_id=run_id, kind="tool_result")]
        )
        assert "tick came" in json.dumps(messages)

    hosted({"timed": timed_machine()}, body)


def test_each_commit_is_told_to_the_run_and_workflow_groups_of_the_channel_layer() -> None:
    from engine.runtime.notify import heard_on, notice_layer

    async def body(host: Host) -> None:
        layer = notice_layer()
        channel = await layer.new_channel()
        await layer.group_add("workflow-notes", channel)
        await heard_on(layer, "workflow-notes", channel)
        run_id = await host.start_run("notes", DOOR)
        await layer.group_add(f"run-{run_id}", channel)
        await until(host, status(run_id, "waiting"))
        heard = []
        while True:
            try:
                heard.append(await asyncio.wait_for(layer.receive(channel), 0.2))
            except TimeoutError:
                break
        heard = [m for m in heard if m["type"] != "notice.probe"]
        assert heard and all(m["type"] == "run.updated" and m["run"] == run_id for m in heard)
        assert heard[-1]["status"] == "waiting"
        run = await host.db(lambda: Run.objects.get(id=run_id))
        assert heard[-1]["seq"] == run.seq

    hosted({"notes": notes.machine}, body)


def test_a_timer_keeps_its_due_time_across_a_restart_of_the_host() -> None:
    """The run's timer is set for 1.5 s; the host stops after 0.5 s and another starts 0.5 s later: the tick
    comes at its due time, about 0.5 s after the restart, not 1.5 s after it."""
    machine = timed_machine(delay=1500)
    marks: dict[str, float] = {}
    run_ids: list[str] = []

    async def main() -> None:
        clock = asyncio.get_running_loop().time
        host = Host({"timed": machine}, owner="test-host")
        await host.start()
        marks["start"] = clock()
        run_ids.append(await host.start_run("timed", None))
        await until(host, lambda: Run.objects.filter(id=run_ids[0], view__turns__0__outstanding__event="wait").exists())
        await asyncio.sleep(0.5)
        await host.stop()
        await asyncio.sleep(0.5)
        host = Host({"timed": machine}, owner="test-host")
        await host.start()
        marks["restart"] = clock()
        try:
            run = await until(host, status(run_ids[0], "done"), timeout=5)
            marks["done"] = clock()
            assert run.output == {"ok": True}
        finally:
            await host.stop()

    asyncio.run(main())
    assert marks["done"] - marks["start"] >= 1.4
    assert marks["done"] - marks["restart"] < 1.0, "the timer started over instead of keeping its due time"


def test_cancel_kills_a_running_commands_process_and_ends_its_effect(tmp_path: Any) -> None:
    import sys

    from engine import effect

    pid_file = tmp_path / "pid"
    work = define_event(name="work", input=Empty, description="Start the long command.")
    machine = jr2_setup(
        events=[work],
        actors={
            "worker": agent(model="script/long.worker", instructions="Start the work."),
            "long": effect.command(
                [
                    sys.executable,
                    "-c",
                    "import os, time; open(os.environ['PID_FILE'], 'w').write(str(os.getpid())); time.sleep(60)",
                ],
                env={"PID_FILE": str(pid_file)},
            ),
        },
    ).create_machine(
        {
            "id": "long",
            "initial": "working",
            "states": {
                "working": {
                    "invoke": {"src": "worker"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"work": "running"}},
                        "running": {"invoke": {"src": "long", "onDone": "idle"}},
                    },
                }
            },
        }
    )
    scripted("long.worker")(lambda turn: ("work", {}) if not turn.answers else None)

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().split()[2] != "Z"
        except FileNotFoundError:
            return False

    async def body(host: Host) -> None:
        run_id = await host.start_run("long", None)
        deadline = asyncio.get_running_loop().time() + 10
        while not (pid_file.exists() and pid_file.read_text()):
            assert asyncio.get_running_loop().time() < deadline, "the command never started"
            await asyncio.sleep(0.02)
        pid = int(pid_file.read_text())
        assert alive(pid)
        await host.cancel(run_id)
        run = await until(host, status(run_id, "cancelled"))
        assert run.view["effects"] == []
        for _ in range(100):
            if not alive(pid):
                break
            await asyncio.sleep(0.02)
        assert not alive(pid), "the command's process outlived the cancel"
        effects = await host.db(
            lambda: list(EffectRecord.objects.filter(run_id=run_id).values_list("status", flat=True))
        )
        assert effects == ["cancelled"]

    hosted({"long": machine}, body)


def test_runs_started_while_leases_are_renewed_are_not_taken_for_lost(settings: Any) -> None:
    """Lease renewal every few ms, runs started all the while: every one of them finishes on this host."""

    async def body(host: Host) -> None:
        run_ids = [await host.start_run("notes", DOOR) for _ in range(30)]
        for run_id in run_ids:
            await until(host, status(run_id, "waiting"))
        assert all(host.holds(run_id) for run_id in run_ids)
        for run_id in run_ids:
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "x"})
        for run_id in run_ids:
            await until(host, status(run_id, "done"))

    hosted({"notes": notes.machine}, body, lease_seconds=0.03)


def test_the_step_that_ends_a_run_hands_its_lease_back_and_refuses_what_is_kept_with_it() -> None:
    """The run's last step writes its end, the refusal of the inputs still kept for it and the lease handed back in
    one transaction: no write of its own after it (a statement and a transaction fewer for every run)."""
    from django.db import connection

    from engine.models import RunInput
    from engine.runtime import store

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        kept = await host.db(store.post_input, run_id, "cancel", {"by": "ada"}, "ada")  # never handed to the run
        statements: list[str] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append(sql)
            return execute(sql, params, many, context)

        def watch() -> None:
            connection.ensure_connection()
            connection.execute_wrappers.append(record)

        await host.db(watch)
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
        run = await until(host, status(run_id, "done"))
        await asyncio.sleep(0.1)  # anything the run's end still wrote after its last step would be written by now
        await host.db(lambda: connection.execute_wrappers.remove(record))
        assert (run.lease_owner, run.lease_expires) == ("", None)
        refused = await host.db(lambda: RunInput.objects.values_list("status", "reason").get(id=kept))
        assert refused == ("refused", "the run ended (done) before your cancel was delivered")
        updates = [sql.split(" WHERE ")[0] for sql in statements if sql.lstrip().startswith('UPDATE "engine_run" ')]
        assert updates, statements
        assert '"status" = %s' in updates[-1] and '"lease_owner" = %s' in updates[-1], updates

    # not parked: a parked run's take-up would deliver the kept cancel first, as a restarted host does
    hosted({"notes": notes.machine}, body, park_seconds=-1)
