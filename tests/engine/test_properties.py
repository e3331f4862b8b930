"""Property tests over the example workflows (every workflows/*.py that imports and defines `machine`).

Random sequences of picks (Menu names and others, valid and invalid params), Gate events, Effect results and time
passing never crash the Session, never deliver a pick outside the Allowed picks, and the journal always replays to
the same snapshot."""

import importlib
import json
import os
import pkgutil
import types
import typing

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import workflows
from engine import Machine, Session

DELIVERED = ("answered", "outstanding", "ended")


def example_machines():
    found = []
    for info in pkgutil.iter_modules(workflows.__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"workflows.{info.name}")
        except Exception:  # a workflow that does not import is another test's business
            continue
        if isinstance(getattr(module, "machine", None), Machine):
            found.append(pytest.param(module.machine, id=info.name))
    return found


MACHINES = example_machines()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)

BASIC = {
    str: st.text(max_size=40),
    int: st.integers(-1000, 1000),
    float: st.floats(allow_nan=False),
    bool: st.booleans(),
}


def value_for(annotation):
    if annotation in BASIC:
        return BASIC[annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([value_for(arg) for arg in typing.get_args(annotation)])
    if annotation is type(None):
        return st.none()
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation) or (typing.Any,)
        return st.lists(value_for(item), max_size=3)
    try:
        return st.from_type(annotation)
    except Exception:
        return json_values


def valid_params(model):
    """Params that follow the model (required fields always, optional fields sometimes)."""
    fields = {}
    optional = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        (fields if info.is_required() else optional)[key] = value_for(info.annotation)
    return st.fixed_dictionaries(fields, optional=optional)


def invalid_params(model):
    fields = list(model.model_fields)
    broken = st.just({})
    if fields:
        broken = st.sampled_from(fields).map(lambda f: {f: {"not": ["a", "valid", "value"]}}) | broken
    return st.one_of(
        broken,
        valid_params(model).map(lambda p: {**p, "sender": {"party": "agent", "id": "forged"}}),
        st.sampled_from(["text", 7, ["a"]]),
        st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    )


def params_for(machine, event_name):
    event = machine.events.get(event_name)
    if event is None:
        return st.one_of(st.none(), st.dictionaries(st.text(max_size=5), json_values, max_size=2))
    return st.one_of(valid_params(event.input), valid_params(event.input), invalid_params(event.input))


def door_for(machine):
    if machine.door is None:
        return st.none()
    return valid_params(machine.door)


def state_of(session):
    return json.dumps(session.snapshot, sort_keys=True, default=repr), len(session.journal)


STEPS = ["pick", "pick", "pick", "gate", "gate", "effect_done", "effect_done", "effect_failed", "advance", "fault"]


def run_random(machine, data):
    door = data.draw(door_for(machine), label="door")
    try:
        machine.validate_door(door)
    except ValidationError:
        assume(False)
    session = Session(machine, door)
    agents = sorted(machine.agents) or ["nobody"]
    all_events = sorted(machine.events)
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        if session.status != "active":
            break
        step = data.draw(st.sampled_from(STEPS), label="step")
        before = state_of(session)
        if step == "pick":
            agent = data.draw(st.sampled_from(agents + agents + ["nobody"]), label="agent")
            allowed = session.allowed_picks(agent)
            menu = list(machine.menu_names(agent))
            if allowed and data.draw(st.booleans(), label="guided"):
                name = data.draw(st.sampled_from(allowed), label="allowed event")
                params = data.draw(valid_params(machine.events[name].input), label="valid params")
            else:
                name = data.draw(st.sampled_from(menu + all_events + ["not_an_event"]), label="event")
                params = data.draw(params_for(machine, name), label="params")
            result = session.pick(agent, name, params)
            event(f"pick {result.outcome}")
            assert result.outcome in ("refused", "unmoved", *DELIVERED)
            if name not in allowed:
                assert result.outcome not in DELIVERED, (agent, name, params, allowed, result)
            if result.outcome == "refused":
                assert state_of(session) == before, "a refused pick changed the run"
        elif step == "gate":
            accepts = {g.id: g.accepts for g in session.gates}
            gate = data.draw(st.sampled_from(sorted(accepts) + ["not-a-gate"]), label="gate")
            if accepts.get(gate) and data.draw(st.booleans(), label="guided"):
                name = data.draw(st.sampled_from(accepts[gate]), label="accepted event")
                params = data.draw(valid_params(machine.events[name].input), label="valid gate params")
            else:
                name = data.draw(st.sampled_from(all_events + ["not_an_event"]), label="gate event")
                params = data.draw(params_for(machine, name), label="gate params")
            result = session.send_gate(gate, name, params)
            event(f"gate {result.outcome}")
            assert result.outcome in ("refused", "unmoved", "delivered")
            if name not in accepts.get(gate, ()):
                assert result.outcome == "refused", (gate, name, accepts, result)
            if result.outcome == "refused":
                assert state_of(session) == before, "a refused Gate event changed the run"
        elif step in ("effect_done", "effect_failed"):
            running = [e["id"] for e in session.snapshot["effects"]]
            effect_id = data.draw(st.sampled_from(running + ["effect-999"]), label="effect")
            value = data.draw(json_values, label="effect value")
            if step == "effect_done":
                session.effect_done(effect_id, value)
            else:
                session.effect_failed(effect_id, {"message": str(value)})
        elif step == "advance":
            session.advance(data.draw(st.integers(0, 120_000), label="ms"))
        else:
            session.fault(data.draw(st.sampled_from(agents), label="faulting agent"), "the model gave up")
        for agent in machine.agents:
            allowed = session.allowed_picks(agent)
            assert set(allowed) <= set(machine.menu_names(agent))
            turn = session.turn_of(agent)
            if turn is None or turn.outstanding is not None:
                assert allowed == [], "picks allowed while a pick is outstanding or with no Turn"
        session.drain()
    return session


@pytest.mark.parametrize("machine", MACHINES)
@settings(
    max_examples=int(os.environ.get("JR2_PROPERTY_EXAMPLES", "80")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_inputs_never_crash_never_deliver_a_pick_outside_the_allowed_picks_and_replay_the_same(machine, data):
    session = run_random(machine, data)
    replayed = Session.replay(machine, session.journal)
    assert replayed.snapshot == session.snapshot
    assert replayed.journal == session.journal


def test_there_is_at_least_one_example_workflow():
    assert any(p.id == "notes" for p in MACHINES)


@pytest.mark.parametrize("machine", MACHINES)
@settings(
    max_examples=int(os.environ.get("JR2_PROPERTY_EXAMPLES", "80")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_run_restored_from_its_json_at_any_entry_goes_on_exactly_like_the_uninterrupted_run(machine, data):
    session = run_random(machine, data)
    journal = session.journal
    cut = data.draw(st.integers(1, len(journal)), label="cut")
    head = Session.replay(machine, journal[:cut])
    restored = Session.restore(machine, json.loads(json.dumps(head.to_json())))
    for index, entry in enumerate(journal[cut:], start=cut):
        restored.apply(entry, index)
    assert json.dumps(restored.to_json(), sort_keys=True) == json.dumps(session.to_json(), sort_keys=True)
    assert restored.journal == journal[cut:]
