"""Random sequences through the runtime (issue 9, "Hypothesis"): per example workflow, a real Host on the suite's
database (SQLite, or PostgreSQL on the second pass) drives runs while Hypothesis throws picks at them (Menu names,
others, names outside the Allowed picks, valid and invalid params; delivered directly, or offered to the Turn loop
through a person's seat), Gate answers (accepted events and others, good and bad input), Effect results (racing
the real Effects), timer advances, faults, waits and a cancel. Every Agent's seat is held by a person, so no
scripted model picks in between.

Checks, for every sequence:
- nothing raises: every input gets an outcome, and the run's task never dies;
- a pick of an event off the Agent's Menu, or a Gate answer with an event the Gate does not accept, is refused;
- replaying the run's journal from the database step by step, every delivered pick was among the Allowed picks
  and every Gate answer among the Gate's accepts at that point, and every entry applies as it was recorded
  (`engine.core.journal.replay`: same outcomes, same outputs);
- the replayed Session ends in the state the host committed last (its final snapshot, and the Run row's view).

`JR2_SEQUENCES` sets the sequences per workflow (default 15); docs/reliability.md ("Random sequences") has the
figures of a long run and the command.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from engine.core.journal.replay import replay
from engine.core.session import HOST_KINDS, Session
from engine.core.statechart.clock import SimulatedClock
from engine.core.workflow import Machine
from engine.models import JournalEntry, Run, RunSnapshot
from engine.runtime.host import Host, RunNotHosted
from engine.runtime.providers import aclose_all, human
from tests.engine.test_properties import MACHINES, door_for, params_for, valid_params

pytestmark = pytest.mark.django_db(transaction=True)

SEQUENCES = int(os.environ.get("JR2_SEQUENCES", "15"))
#: What the sequences did (outcomes of picks and Gate answers, how runs ended), printed per workflow.
seen: Counter[str] = Counter()
DELIVERED = ("answered", "outstanding", "ended")
#: Steps by weight; a fault or a cancel ends the run, so they are rare enough to let most runs go somewhere.
STEPS = (
    ["pick"] * 30
    + ["offer"] * 5
    + ["gate"] * 20
    + ["effect_done"] * 5
    + ["effect_failed"] * 5
    + ["advance"] * 10
    + ["wait"] * 20
    + ["fault"] * 2
    + ["cancel"] * 3
)


@pytest.fixture
def host_loop(settings: Any) -> Iterator[tuple[asyncio.AbstractEventLoop, Host, int]]:
    """A started Host on every example workflow, on a loop of its own that each example runs on."""
    settings.JR2_SCRIPTED = True
    user = User.objects.create_user("fuzzer")
    loop = asyncio.new_event_loop()
    host = Host({m.values[0].id: m.values[0] for m in MACHINES}, owner="sequences", lease_seconds=120, park_seconds=-1)
    loop.run_until_complete(host.start())
    try:
        yield loop, host, user.pk
    finally:
        loop.run_until_complete(host.stop())
        loop.run_until_complete(aclose_all())
        loop.close()


def plans(machine: Machine) -> st.SearchStrategy[tuple[Any, list[dict[str, Any]]]]:
    """A door and a list of steps, drawn whole before the run starts: the live run decides only which of a step's
    drawn values it uses (an index into the Allowed picks, say), so each example draws the same way every time."""
    names = sorted(machine.events) + ["not_an_event"]
    step = st.fixed_dictionaries(
        {
            "kind": st.sampled_from(STEPS),
            "agent": st.sampled_from(sorted(machine.agents) + ["nobody"]),
            "guided": st.integers(0, 3).map(bool),
            "index": st.integers(0, 999),
            "any": st.fixed_dictionaries({name: params_for(machine, name) for name in names}),
            "good": st.fixed_dictionaries({name: valid_params(e.input) for name, e in machine.events.items()}),
            "wait": st.sampled_from([0, 0.001, 0.01, 0.05]),
        }
    )
    return st.tuples(door_for(machine), st.lists(step, min_size=1, max_size=30))


async def sequence(host: Host, machine: Machine, user: int, door: Any, steps: list[dict[str, Any]]) -> str | None:
    """One run: its door, then the steps until it ends (then it is cancelled if still live)."""
    try:
        run_id = await host.start_run(
            machine.id, door, user_id=user, seats={agent: (user, "fuzzer") for agent in machine.agents}
        )
    except ValidationError:
        return None
    names = sorted(machine.events) + ["not_an_event"]
    for step in steps:
        driver = host.drivers.get(run_id)
        if driver is None:
            break
        session, kind, agent, index = driver.session, step["kind"], step["agent"], step["index"]
        try:
            if kind in ("pick", "offer"):
                allowed = session.allowed_picks(agent)
                if allowed and step["guided"]:
                    name = allowed[index % len(allowed)]
                    params = step["good"][name]
                else:
                    name = names[index % len(names)]
                    params = step["any"][name]
                if kind == "offer":
                    if agent in machine.agents:
                        human.offer(run_id, agent, name, params if isinstance(params, dict) else {"value": params})
                    continue
                result = await host.deliver(run_id, "pick", agent=agent, event=name, params=params)
                seen[f"pick {result.outcome}"] += 1
                assert result.outcome in ("refused", "unmoved", *DELIVERED), result
                if name not in machine.menu_names(agent):
                    assert result.outcome == "refused", (agent, name, result)
            elif kind == "gate":
                accepts = {g.id: g.accepts for g in session.gates}
                gates = sorted(accepts) * 3 + ["not-a-gate"]
                gate = gates[index % len(gates)]
                if accepts.get(gate) and step["guided"]:
                    name = accepts[gate][index % len(accepts[gate])]
                    params = step["good"][name]
                else:
                    name = names[index % len(names)]
                    params = step["any"][name]
                delivery = await host.deliver(run_id, "gate", gate=gate, event=name, params=params)
                seen[f"gate {delivery.outcome}"] += 1
                assert delivery.outcome in ("refused", "unmoved", "delivered"), delivery
                if gate not in accepts or name not in machine.events:
                    assert delivery.outcome == "refused", (gate, name, delivery)
            elif kind in ("effect_done", "effect_failed"):
                running = [e.id for e in session.effects] + ["effect-999"]
                effect = running[index % len(running)]
                value = {"stdout": "", "exit_code": 0} if kind == "effect_done" else {"message": "it broke"}
                outcome = await host.deliver(run_id, kind, effect=effect, value=value)
                if effect == "effect-999":
                    assert outcome.outcome == "refused", outcome
            elif kind == "advance":
                await host.deliver(run_id, "advance")
            elif kind == "fault":
                faulting = sorted(machine.agents) or ["nobody"]
                await host.deliver(run_id, "fault", agent=faulting[index % len(faulting)], reason="it gave up")
            elif kind == "wait":
                await asyncio.sleep(step["wait"])
            else:
                await host.cancel(run_id)
        except RunNotHosted:
            break
    if run_id in host.drivers:
        try:
            await host.cancel(run_id)
        except RunNotHosted:
            pass
    for _ in range(500):
        if run_id not in host.drivers:
            break
        await asyncio.sleep(0.01)
    return run_id


def check_journal(machine: Machine, run_id: str) -> None:
    """The run's journal, replayed step by step: every delivered pick was allowed and every Gate answer accepted
    when it came, every entry applies as recorded, and the end is the state the host committed."""
    rows = list(JournalEntry.objects.filter(run_id=run_id).order_by("seq"))
    entries = [row.entry for row in rows]
    assert [row.seq for row in rows] == list(range(1, len(rows) + 1)), "journal entries lost or duplicated"
    start = entries[0]
    session = Session(machine, input=start["input"], clock=SimulatedClock(start.get("at", 0)))
    session.drain()
    for index, entry in enumerate(entries[1:], start=2):
        kind = entry.get("kind")
        if kind == "pick" and entry.get("outcome") in DELIVERED:
            allowed = session.allowed_picks(entry["agent"])
            assert entry["event"] in allowed, f"entry {index}: {entry['event']} delivered outside {allowed}"
        if kind == "gate":
            accepts = {g.id: g.accepts for g in session.gates}
            assert entry["event"] in accepts.get(entry["gate"], ()), (
                f"entry {index}: {entry['event']} delivered to Gate {entry['gate']} accepting {accepts}"
            )
        if kind not in HOST_KINDS:
            session.apply(entry, index)
            session.drain()
    report = replay(machine, [{"seq": r.seq, "kind": r.kind, "entry": r.entry, "out": r.out} for r in rows])
    assert report.same, report.message
    run = Run.objects.get(id=run_id)
    assert run.seq == len(rows), (run.seq, len(rows))
    # A resume's way to the same end: the last snapshot (none is written once the run ends), then the entries after it.
    last = RunSnapshot.objects.filter(run_id=run_id).order_by("-seq").first()
    assert last is not None and last.seq < len(rows), (last and last.seq, len(rows))
    resumed = Session.restore(machine, last.data)
    for index, row in enumerate(rows[last.seq :], start=last.seq + 1):
        resumed.apply(row.entry, index)
    resumed.drain()
    assert json.dumps(resumed.to_json(), sort_keys=True) == json.dumps(session.to_json(), sort_keys=True)
    assert run.status in ("done", "failed", "cancelled") and session.status == run.status
    assert run.view["value"] == session.value and run.output == session.output


@pytest.mark.parametrize("machine", MACHINES)
def test_random_sequences_through_the_runtime_never_crash_never_deliver_outside_and_replay_the_same(
    machine: Machine, host_loop: tuple[asyncio.AbstractEventLoop, Host, int]
) -> None:
    loop, host, user = host_loop
    seen.clear()

    @settings(
        max_examples=SEQUENCES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(plan=plans(machine))
    def one(plan: tuple[Any, list[dict[str, Any]]]) -> None:
        run_id = loop.run_until_complete(sequence(host, machine, user, *plan))
        if run_id is not None:
            check_journal(machine, run_id)
            seen[f"run {Run.objects.get(id=run_id).status}"] += 1
            seen["journal entries"] += JournalEntry.objects.filter(run_id=run_id).count()

    one()
    print(f"\n{machine.id}: {dict(sorted(seen.items()))}")
