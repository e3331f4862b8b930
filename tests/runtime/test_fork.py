"""Forks: a new run from the Session a run had after one of its steps, with its context edited or a different Gate
answer, driven by a real Host on SQLite; the parent never changes, and a bad fork makes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, Field

from engine import define_event, jr2_setup
from engine.core.journal.replay import replay
from engine.models import JournalEntry, Run, RunSnapshot, TurnMessage, TurnRecord
from engine.runtime.host import Host, HostError
from engine.runtime.providers import aclose_all
from tests.runtime.hosting import hosted, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up.\nA new export button."}


class GoInput(BaseModel):
    pass


class NameDoor(BaseModel):
    name: str = Field(description="Who to greet.")


go = define_event(name="go", input=GoInput, description="Send the greeting.")

#: A Gate, then an output made from the context: a fork with another greeting ends with another output.
greet = jr2_setup(events=[go]).create_machine(
    {
        "id": "greet",
        "input": NameDoor,
        "context": lambda input: {"name": input.name, "greeting": "Hello", "times": 1},
        "initial": "waiting",
        "states": {
            "waiting": {"invoke": {"src": "gate", "id": "desk"}, "on": {"go": "sent"}},
            "sent": {"type": "final"},
        },
        "output": lambda context: {"text": f"{context['greeting']}, {context['name']}!" * context["times"]},
    }
)

WORKFLOWS = {"notes": notes.machine, "greet": greet}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


def _rows(run_id: str) -> dict[str, Any]:
    run = Run.objects.get(id=run_id)
    return {
        "status": run.status,
        "output": run.output,
        "seq": run.seq,
        "updated_at": run.updated_at,
        "journal": list(JournalEntry.objects.filter(run_id=run_id).values_list("seq", "kind", "entry")),
        "turns": TurnRecord.objects.filter(run_id=run_id).count(),
        "messages": TurnMessage.objects.filter(run_id=run_id).count(),
    }


def _asked_step(run_id: str) -> int:
    """The step after which the notes run waits at its Gate: the writer's outstanding `ask`."""
    return int(JournalEntry.objects.get(run_id=run_id, kind="pick", entry__event="ask").seq)


def test_a_fork_with_another_gate_answer_runs_to_another_output_and_the_parent_never_changes() -> None:
    found: dict[str, Any] = {}

    async def body(host: Host) -> None:
        parent = await host.start_run("notes", DOOR)
        await until(host, status(parent, "waiting"))
        await host.deliver(parent, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
        await until(host, status(parent, "done"))
        before = await host.db(_rows, parent)
        step = await host.db(_asked_step, parent)
        fork = await host.fork_run(parent, step, answer=("writing.asking", "reply", {"text": "Operators"}))
        done = await until(host, status(fork, "done"))
        assert "Written for: Operators" in done.output["notes"]
        assert "- Faster start-up." in done.output["notes"]
        assert await host.db(_rows, parent) == before
        found.update(parent=parent, fork=fork, step=step, before=before)

    hosted(WORKFLOWS, body)

    fork = Run.objects.get(id=found["fork"])
    assert fork.parent_id == found["parent"] and fork.parent_step == found["step"]
    assert list(Run.objects.get(id=found["parent"]).forks.values_list("id", flat=True)) == [fork.id]
    kinds = [k for k in JournalEntry.objects.filter(run=fork).values_list("kind", flat=True) if k != "advance"]
    assert kinds == ["fork", "gate", "pick"]
    assert RunSnapshot.objects.filter(run=fork, seq=1).exists()
    # The writer's Turn was copied with its conversation up to the step, and went on from it.
    [turn] = TurnRecord.objects.filter(run=fork)
    assert turn.status == "ended" and turn.turn == "turn-1"
    assert list(TurnMessage.objects.filter(run=fork).values_list("kind", flat=True)) == [
        "prompt",
        "reply",
        "tool_result",
        "reply",
        "tool_result",
    ]
    journal = [
        {"seq": e.seq, "kind": e.kind, "entry": e.entry, "out": e.out}
        for e in JournalEntry.objects.filter(run=fork).order_by("seq")
    ]
    assert replay(notes.machine, journal).same


def test_a_fork_with_an_edited_context_runs_to_another_output_and_survives_a_restart() -> None:
    made: dict[str, str] = {}

    async def first(host: Host) -> None:
        parent = await host.start_run("greet", {"name": "Ada"})
        await until(host, status(parent, "waiting"))
        fork = await host.fork_run(parent, 1, context={"name": "Ada", "greeting": "Bonjour", "times": 2, "extra": True})
        row = await until(host, status(fork, "waiting"))
        assert row.view["context"]["greeting"] == "Bonjour"
        await host.deliver(parent, "gate", gate="desk", event="go", params={})
        await until(host, status(parent, "done"))
        made.update(parent=parent, fork=fork)

    hosted(WORKFLOWS, first)

    async def second(host: Host) -> None:  # a new host takes the fork up from its snapshot
        assert host.holds(made["fork"])
        await host.deliver(made["fork"], "gate", gate="desk", event="go", params={})
        await until(host, status(made["fork"], "done"))

    hosted(WORKFLOWS, second)

    assert Run.objects.get(id=made["parent"]).output == {"text": "Hello, Ada!"}
    assert Run.objects.get(id=made["fork"]).output == {"text": "Bonjour, Ada!Bonjour, Ada!"}


@pytest.mark.parametrize(
    ("step", "kwargs", "words"),
    [
        (
            1,
            {"context": {"name": "Ada", "greeting": 7, "times": 1}},
            'context.greeting must be a string like "Hello"; got a number',
        ),
        (1, {"context": {"name": "Ada", "greeting": "Hi"}}, "context.times is missing"),
        (1, {"context": ["not", "an", "object"]}, "context must be an object"),
        (9, {}, "step must be a journal entry of run"),
        (0, {}, "step must be a journal entry of run"),
        (1, {"answer": ("nowhere", "go", {})}, 'no Gate "nowhere" is open after step 1 (open Gates: desk)'),
        (
            1,
            {"answer": ("desk", "go", {"sender": "me"})},
            "the Gate answer is refused after step 1: no party can write",
        ),
        (
            1,
            {"context": {"name": "A\x00da", "greeting": "Hi", "times": 1}},
            "context.name: text may not contain the NUL character",
        ),
    ],
)
def test_a_bad_fork_is_refused_in_words_and_makes_nothing(step: int, kwargs: dict[str, Any], words: str) -> None:
    async def body(host: Host) -> None:
        parent = await host.start_run("greet", {"name": "Ada"})
        await until(host, status(parent, "waiting"))
        with pytest.raises(HostError, match=None) as refused:
            await host.fork_run(parent, step, **kwargs)
        assert words in str(refused.value)
        assert await host.db(lambda: Run.objects.count()) == 1

    hosted(WORKFLOWS, body)


def test_a_run_cannot_be_forked_after_it_ended_or_when_it_does_not_exist() -> None:
    async def body(host: Host) -> None:
        parent = await host.start_run("greet", {"name": "Ada"})
        await until(host, status(parent, "waiting"))
        await host.deliver(parent, "gate", gate="desk", event="go", params={})
        done = await until(host, status(parent, "done"))
        with pytest.raises(HostError, match=r"after step \d+ run \w+ had already ended \(done\)"):
            await host.fork_run(parent, done.seq)
        with pytest.raises(HostError, match="no run nosuchrun"):
            await host.fork_run("nosuchrun", 1)
        assert await host.db(lambda: Run.objects.count()) == 1

    hosted(WORKFLOWS, body)


def test_a_web_host_writes_the_fork_and_a_worker_takes_it_up_and_takes_its_gate_answer() -> None:
    async def main() -> None:
        web = Host(WORKFLOWS, owner="web-1", role="web", scan_seconds=0.05)
        worker = Host(WORKFLOWS, owner="worker-1", role="worker", scan_seconds=0.05)
        await web.start()
        await worker.start()
        try:
            parent = await web.start_run("notes", DOOR)
            await until(web, status(parent, "waiting"))
            step = await web.db(_asked_step, parent)
            fork = await web.fork_run(parent, step, answer=("writing.asking", "reply", {"text": "Night owls"}))
            assert fork not in web.drivers
            done = await until(web, status(fork, "done"))
            assert done.lease_owner in ("", "worker-1") and "Written for: Night owls" in done.output["notes"]
            assert await web.db(lambda: Run.objects.get(id=parent).status) == "waiting"
        finally:
            await web.stop()
            await worker.stop()
            await aclose_all()

    asyncio.run(main())


def test_a_fork_waiting_at_a_gate_is_in_the_inbox_and_the_search_from_its_start() -> None:
    from engine.models import GateRecord, RunMark, RunText

    found: dict[str, Any] = {}

    async def body(host: Host) -> None:
        parent = await host.start_run("notes", DOOR)
        await until(host, status(parent, "waiting"))
        step = await host.db(_asked_step, parent)
        found["fork"] = await host.fork_run(parent, step)
        await until(host, status(found["fork"], "waiting"))
        await host.cancel(parent)

    hosted(WORKFLOWS, body)
    fork = found["fork"]
    assert list(GateRecord.objects.filter(run_id=fork, closed_at=None).values_list("gate", flat=True)) == [
        "writing.asking"
    ]
    assert RunMark.objects.filter(run_id=fork, kind="event", name="ask").exists()
    assert RunMark.objects.filter(run_id=fork, kind="agent", name="writer").exists()
    assert "faster start-up" in RunText.objects.get(run_id=fork).input


def _replied_step(run_id: str) -> int:
    """The step after which the editor's reply was taken: the writer's Turn is open, nothing outstanding."""
    return int(JournalEntry.objects.get(run_id=run_id, kind="gate", entry__event="reply").seq)


@pytest.mark.parametrize("restart", [None, ["writer"]])
def test_a_restarted_turn_works_from_the_edited_context_and_an_unrestarted_one_from_the_old(restart: Any) -> None:
    made: dict[str, Any] = {}

    async def body(host: Host) -> None:
        parent = await host.start_run("notes", DOOR)
        await until(host, status(parent, "waiting"))
        await host.deliver(parent, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
        await until(host, status(parent, "done"))
        step = await host.db(_replied_step, parent)
        context = {"changes": "A new export button.", "replies": 1, "question": "Who reads these?"}
        fork = await host.fork_run(parent, step, context=context, restart=restart)
        if restart:  # a fresh conversation: the writer asks again, from the new prompt
            await until(host, status(fork, "waiting"))
            await host.deliver(fork, "gate", gate="writing.asking", event="reply", params={"text": "Operators"})
        made["done"] = await until(host, status(fork, "done"))
        made["fork"] = fork

    hosted(WORKFLOWS, body)

    notes_text = made["done"].output["notes"]
    [turn] = TurnRecord.objects.filter(run_id=made["fork"])
    first = TurnMessage.objects.filter(run_id=made["fork"], conversation=turn.conversation).order_by("seq").first()
    assert first is not None and first.kind == "prompt"
    if restart:
        assert "- A new export button." in notes_text and "Faster start-up" not in notes_text
        assert turn.prompt.endswith("A new export button.") and turn.conversation.endswith("~restart")
        assert "A new export button." in first.content[0]["text"]
        [entry] = JournalEntry.objects.filter(run_id=made["fork"], kind="fork").values_list("entry", flat=True)
        assert entry["restarted"] == ["writer"]
    else:
        assert "- Faster start-up." in notes_text, "without the option the Turn keeps the prompt it was given"
    journal = [
        {"seq": e.seq, "kind": e.kind, "entry": e.entry, "out": e.out}
        for e in JournalEntry.objects.filter(run_id=made["fork"]).order_by("seq")
    ]
    assert replay(notes.machine, journal).same
