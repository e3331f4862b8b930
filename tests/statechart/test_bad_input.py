"""Bad input gets a clear error that names what is wrong, never a silent wrong state (issue 2, section 2)."""

import pytest

from engine.core.statechart import (
    ConfigError,
    EventError,
    ImplementationError,
    SnapshotError,
    create_actor,
    create_machine,
    raise_,
)


def test_unknown_target_names_the_target_and_the_state():
    with pytest.raises(ConfigError) as err:
        create_machine({"id": "m", "initial": "a", "states": {"a": {"on": {"GO": "nowhere"}}}})
    assert "nowhere" in str(err.value) and "#m.a" in str(err.value) and "GO" in str(err.value)


def test_unknown_id_target_names_the_id():
    with pytest.raises(ConfigError, match="#ghost"):
        create_machine({"id": "m", "initial": "a", "states": {"a": {"on": {"GO": "#ghost"}}}})


def test_initial_that_is_not_a_child_is_refused():
    with pytest.raises(ConfigError) as err:
        create_machine({"id": "m", "initial": "b", "states": {"a": {}}})
    assert "'b'" in str(err.value) and "#m" in str(err.value) and "['a']" in str(err.value)


def test_compound_state_without_initial_suggests_one():
    with pytest.raises(ConfigError, match="\"initial\": 'a'"):
        create_machine({"id": "m", "states": {"a": {}, "b": {}}})


@pytest.mark.parametrize(
    "kind, config, impl",
    [
        (
            "guard",
            {"initial": "a", "states": {"a": {"on": {"GO": {"guard": "isReady", "target": "b"}}}, "b": {}}},
            "isReady",
        ),
        ("action", {"initial": "a", "states": {"a": {"on": {"GO": {"actions": "shout"}}}}}, "shout"),
        (
            "actor",
            {"initial": "a", "states": {"a": {"on": {"GO": "b"}}, "b": {"invoke": {"src": "fetcher"}}}},
            "fetcher",
        ),
        ("delay", {"initial": "a", "states": {"a": {"on": {"GO": "b"}}, "b": {"after": {"slowly": "a"}}}}, "slowly"),
    ],
)
def test_unknown_named_implementation_is_an_error_naming_it(kind, config, impl):
    machine = create_machine({"id": "m", **config})
    snapshot, _ = machine.initial_transition()
    with pytest.raises(Exception) as err:
        machine.transition(snapshot, "GO")
    assert impl in str(err.value)
    assert kind in str(err.value)


def test_unknown_named_guard_in_a_running_actor_puts_it_in_error():
    machine = create_machine(
        {"initial": "a", "states": {"a": {"on": {"GO": {"guard": "nope", "target": "b"}}}, "b": {}}}
    )
    actor = create_actor(machine)
    seen = []
    actor.subscribe(error=seen.append)
    actor.start()
    actor.send("GO")
    assert actor.snapshot.status == "error"
    assert isinstance(actor.snapshot.error, ImplementationError)
    assert seen == [actor.snapshot.error]


@pytest.mark.parametrize("event", [{"kind": "GO"}, {"type": 3}, {"type": None}])
def test_event_without_a_string_type_is_refused(event):
    machine = create_machine({"initial": "a", "states": {"a": {}}})
    snapshot, _ = machine.initial_transition()
    with pytest.raises(EventError, match="string 'type'"):
        machine.transition(snapshot, event)
    actor = machine.start()
    with pytest.raises(EventError):
        actor.send(event)
    assert actor.snapshot.status == "active"


def test_event_that_is_not_a_dict_or_string_is_a_type_error():
    actor = create_machine({"initial": "a", "states": {"a": {}}}).start()
    with pytest.raises(TypeError, match="int"):
        actor.send(42)


def test_wildcard_event_is_refused():
    machine = create_machine({"initial": "a", "states": {"a": {}}})
    snapshot, _ = machine.initial_transition()
    with pytest.raises(EventError, match="wildcard"):
        machine.transition(snapshot, "*")


def test_snapshot_from_another_machine_is_refused():
    one = create_machine({"id": "one", "initial": "a", "states": {"a": {}}})
    two = create_machine({"id": "two", "initial": "a", "states": {"a": {}}})
    snapshot, _ = one.initial_transition()
    with pytest.raises(SnapshotError, match="'one'"):
        two.transition(snapshot, "GO")
    with pytest.raises(SnapshotError, match="'one'"):
        two.resolve_snapshot(snapshot.to_json())


def test_persisted_snapshot_naming_a_state_the_machine_lacks_is_refused():
    machine = create_machine({"id": "m", "initial": "a", "states": {"a": {}}})
    with pytest.raises(SnapshotError, match="ghost"):
        machine.resolve_snapshot({"machine": "m", "value": "ghost", "context": {}})


def test_raise_with_a_string_event_is_refused_when_built():
    with pytest.raises(ConfigError, match='raise_\\(\\{"type": "GO"\\}\\)'):
        raise_("GO")


def test_throwing_action_puts_the_actor_in_error_with_the_exception():
    boom = RuntimeError("boom")

    def explode():
        raise boom

    actor = create_machine({"initial": "a", "states": {"a": {"on": {"GO": {"actions": explode}}}}}).start()
    actor.send("GO")
    assert actor.snapshot.status == "error"
    assert actor.snapshot.error is boom
    actor.send("GO")
    assert actor.snapshot.error is boom
