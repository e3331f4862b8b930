"""The NUL character through the runtime (engine/core/text.py), on whichever database the suite runs (SQLite, then
PostgreSQL, which holds NUL neither in text nor in jsonb): what a party sends holding it is refused in words and
changes nothing; what a model or an Effect writes holding it is kept with U+FFFD in its place; and the run goes on.
Before, a door holding NUL crashed the commit on PostgreSQL."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from django.contrib.auth.models import User
from pydantic import BaseModel, ValidationError

from engine import agent, define_event, effect, from_pick, jr2_setup, scripted
from engine.core.outputs import Delivery
from engine.models import EffectRecord, JournalEntry, Run, RunInput, TurnMessage
from engine.runtime.host import Host
from tests.runtime.hosting import fleet, hosted, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up."}
QUESTION = "Who reads these notes, and what should they know first?"


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


def journal(run_id: str) -> list[dict[str, Any]]:
    return [row.entry for row in JournalEntry.objects.filter(run_id=run_id).order_by("seq")]


def test_a_door_holding_nul_is_refused_naming_the_field_and_writes_no_run() -> None:
    async def body(host: Host) -> None:
        with pytest.raises(ValidationError, match=r"changes\n  text may not contain the NUL character"):
            await host.start_run("notes", {"changes": "Faster\x00start-up."})
        assert await host.db(Run.objects.count) == 0

    hosted({"notes": notes.machine}, body)


def test_a_gate_answer_or_a_pick_holding_nul_is_refused_and_changes_nothing_then_a_good_one_goes_through() -> None:
    pat = User.objects.create_user("pat")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR, seats={"writer": (pat.pk, "pat")})
        await until(host, lambda: any(t.get("agent") == "writer" for t in Run.objects.get(id=run_id).view["turns"]))
        before = await host.db(journal, run_id)
        picked = await host.deliver(run_id, "pick", agent="writer", event="ask", params={"question": "Who\x00?"})
        assert picked.outcome == "refused"
        assert (
            picked.error == 'the input of "ask" is not valid: question: text may not contain the NUL character '
            "(\\u0000)"
        )
        assert (
            await host.deliver(run_id, "pick", agent="writer", event="ask", params={"question": QUESTION})
        ).outcome == "outstanding"
        await until(host, status(run_id, "waiting"))
        before = await host.db(journal, run_id)
        refused = await host.deliver(
            run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins", "note\x00": "x"}
        )
        assert isinstance(refused, Delivery) and refused.outcome == "refused" and refused.code == "invalid"
        assert "note\\x00" not in str(refused.error) and "text may not contain the NUL character" in str(refused.error)
        assert await host.db(journal, run_id) == before
        delivered = await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
        assert delivered.outcome == "delivered"

    hosted({"notes": notes.machine}, body)


def test_through_a_web_host_an_input_holding_nul_reaches_the_worker_as_sent_and_is_refused_there() -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        refused = await web.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ad\x00mins"})
        assert isinstance(refused, Delivery) and refused.outcome == "refused", refused
        assert "text: text may not contain the NUL character" in str(refused.error)
        sent = await web.db(lambda: RunInput.objects.filter(run_id=run_id).values_list("args", flat=True).get())
        assert "Ad\\u0000mins" in sent
        assert (
            await web.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
        ).outcome == "delivered"
        await until(web, status(run_id, "done"))

    fleet(body, "web", "worker")


class Text(BaseModel):
    text: str


def nul_machine() -> Any:
    """A model that picks with NUL in its input, then a command whose output holds NUL."""
    go = define_event(name="go", input=Text, description="Run the command on this text.")
    scripted("nul.worker")(lambda turn: ("go", {"text": "a\x00b"}) if not turn.answers else None)
    return jr2_setup(
        events=[go],
        actors={
            "worker": agent(model="script/nul.worker", instructions="Start the work."),
            "binary": effect.command([sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read() + chr(0))"]),
        },
    ).create_machine(
        {
            "id": "nul",
            "initial": "working",
            "states": {
                "working": {
                    "invoke": {"src": "worker"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"go": "running"}},
                        "running": {
                            "invoke": {
                                "src": "binary",
                                "onDone": "#nul.finished",
                                "input": from_pick(fill=lambda params: {"stdin": params["text"]}),
                            }
                        },
                    },
                },
                "finished": {"type": "final"},
            },
        }
    )


def test_what_a_model_or_an_effect_writes_holding_nul_is_kept_with_the_replacement_character() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("nul", None)
        await until(host, status(run_id, "done"))
        entries = await host.db(journal, run_id)
        pick = next(e for e in entries if e.get("kind") == "pick")
        assert pick["params"] == {"text": "a\ufffdb"} and pick["outcome"] != "refused"
        done = next(e for e in entries if e.get("kind") == "effect_done")
        assert done["output"]["stdout"] == "a\ufffdb\ufffd"
        record = await host.db(lambda: EffectRecord.objects.get(run_id=run_id))
        assert record.result["stdout"] == "a\ufffdb\ufffd"
        messages = await host.db(lambda: [m.content for m in TurnMessage.objects.filter(run_id=run_id)])
        assert "a\ufffdb" in repr(messages) and "\x00" not in repr(messages)

    hosted({"nul": nul_machine()}, body)
