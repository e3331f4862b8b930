"""The release workflow (workflows/release.py), the docs' example of a child Machine with its own Agents: driven
by hand through a `Session`, played by its own scripted stand-ins, and loaded by the loader as `jr2 check` loads
it."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from django.core.management import call_command

from engine import Session
from engine.core.outputs import GateOpened, PickAnswered, RunEnded, TurnStarted
from engine.core.scripts import script_named
from engine.runtime.loader import load_workflows
from engine.runtime.providers.base import TurnView
from workflows import release

ROOT = Path(__file__).resolve().parents[2]
DOOR = {"version": "2.4.0", "changes": "Faster start-up\nA --quiet flag"}
SEATS = """\
seats: workflow "release" — who may send what, per state
  release.preparing agent:manager: [propose, write_changelog]
  release.preparing.writing child Machine "changelog" (invoke changelog; its parties are named changelog/<name>):
    changelog.drafting agent:drafter: [submit]
    changelog.checking agent:checker: [accept, revise]
  release.approving gate:approval: [approve, reject]"""


def of(outputs, cls):
    return [o for o in outputs if isinstance(o, cls)]


def test_the_child_machine_is_an_actor_slot_with_its_own_seats_and_no_warnings():
    assert release.machine.seats_text("release") == SEATS
    assert release.machine.menus() == {"manager": ["propose", "write_changelog"]}
    assert release.changelog.menus() == {"checker": ["accept", "revise"], "drafter": ["submit"]}
    assert release.machine.warnings() == [] and release.changelog.warnings() == []


def test_a_release_by_hand_the_childs_output_answers_the_managers_pick():
    session = Session(release.machine, DOOR)
    [started] = of(session.drain(), TurnStarted)
    assert (started.agent, started.allowed) == ("manager", ("write_changelog",))

    assert session.pick("manager", "write_changelog", {"audience": "people who upgrade"}).outcome == "outstanding"
    [drafter] = of(session.drain(), TurnStarted)
    assert drafter.agent == "changelog/drafter"
    assert drafter.prompt.startswith("Write the changelog entry of version 2.4.0 for people who upgrade.")
    assert session.allowed_picks("manager") == []
    assert session.pick("manager", "propose", {"summary": "early"}).outcome == "refused"

    assert session.pick("changelog/drafter", "submit", {"entry": "- Faster start-up"}).outcome == "ended"
    [checker] = of(session.drain(), TurnStarted)
    assert checker.agent == "changelog/checker" and checker.allowed == ("accept", "revise")
    assert session.pick("changelog/checker", "revise", {"notes": "Name both changes."}).outcome == "ended"
    [again] = of(session.drain(), TurnStarted)
    assert again.agent == "changelog/drafter" and again.prompt.endswith("Name both changes.")
    session.pick("changelog/drafter", "submit", {"entry": "- Faster start-up\n- A --quiet flag"})
    assert session.pick("changelog/checker", "accept", {}).outcome == "ended"
    [answered] = of(session.drain(), PickAnswered)
    assert (answered.event, answered.allowed) == ("write_changelog", ("propose", "write_changelog"))
    assert answered.answer == "The changelog entry (revised 1 time(s)):\n- Faster start-up\n- A --quiet flag"

    assert session.pick("manager", "propose", {"summary": "Two changes."}).outcome == "ended"
    [gate] = of(session.drain(), GateOpened)
    assert (gate.gate, gate.accepts) == ("approval", ("approve", "reject"))
    assert gate.meta["changelog"] == "- Faster start-up\n- A --quiet flag"

    assert session.send_gate("approval", "reject", {"reason": "Say what --quiet hides."}).outcome == "delivered"
    [back] = of(session.drain(), TurnStarted)
    assert back.agent == "manager" and back.prompt.endswith("The approver sent it back: Say what --quiet hides.")
    assert back.allowed == ("write_changelog",)  # the rejection cleared the entry: propose waits for a new one


def _play(session: Session) -> list:
    """Play every open Turn with its scripted model until nothing moves: the parent's Agents by their stand-ins
    (`release.<slot>`), the child's by the `script/` models their slots declare. Each answer is read back as the
    Turn loop gives it (the tool result's text)."""
    answers: dict[str, list[str]] = {}
    outputs = session.drain()
    everything = list(outputs)
    while True:
        for out in of(outputs, PickAnswered):
            answers.setdefault(out.turn, []).append(out.message)
        picked = False
        for turn in session.turns:
            if turn.outstanding is not None:
                continue
            slot = session.machine.agent_slot(turn.agent)
            name = (
                slot.model.removeprefix("script/")
                if slot.model.startswith("script/")
                else f"{session.machine.id}.{turn.agent}"
            )
            script = script_named(name)
            assert script is not None, f"no scripted model {name} for {turn.agent}"
            view = TurnView(
                agent=turn.agent,
                turn=turn.id,
                prompt=turn.prompt,
                menu=tuple(session.menu(turn.agent)),
                allowed_picks=tuple(session.allowed_picks(turn.agent)),
                answers=tuple(answers.get(turn.id, ())),
                notices=turn.notices,
            )
            pick = script(view)
            if pick is not None:
                result = session.pick(turn.agent, *pick)
                assert result.outcome != "refused", (turn.agent, pick, result)
                answers.setdefault(turn.id, []).append(result.text())
                picked = True
                break
        outputs = session.drain()
        everything.extend(outputs)
        if not picked and not of(outputs, PickAnswered):
            return everything


def test_the_scripted_stand_ins_play_a_release_to_its_end():
    session = Session(release.machine, DOOR)
    _play(session)
    [gate] = session.gates
    assert gate.id == "approval" and gate.meta["changelog"] == "- Changed: Faster start-up\n- Changed: A --quiet flag"
    assert session.send_gate("approval", "approve", {}).outcome == "delivered"
    [ended] = of(session.drain(), RunEnded)
    assert ended.status == "done"
    assert session.output == {
        "version": "2.4.0",
        "changelog": "- Changed: Faster start-up\n- Changed: A --quiet flag",
        "summary": "Release 2.4.0: the changelog is written and checked.",
    }
    replayed = Session.replay(release.machine, session.journal)
    assert replayed.snapshot == session.snapshot


def test_a_childs_fault_is_told_to_the_manager_by_the_onerror_answer():
    session = Session(release.machine, DOOR)
    session.pick("manager", "write_changelog", {"audience": "everyone"})
    session.drain()
    session.fault("changelog/drafter", "the model kept refusing")
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == (
        "The changelog could not be written: a changelog Agent's Turn could not go on: the model kept refusing"
    )
    assert session.allowed_picks("manager") == ["write_changelog"]


def test_the_loader_and_jr2_check_accept_it():
    found = load_workflows(ROOT / "workflows")
    assert found["release"].status == "ok", found["release"].message()
    assert found.machines["release"].seats_text("release") == SEATS
    out = StringIO()
    call_command("jr2", "check", "--workflows", str(ROOT / "workflows"), stdout=out)
    assert 'release.py: workflow "release": ok\n' + SEATS + "\n" in out.getvalue()
