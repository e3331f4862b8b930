"""History pseudo-states: shallow, deep, parallel, defaults, and restoring persisted history.

Behaviour ported from xstate's packages/core/test/history.test.ts (xstate 5.32.5).
"""

import json

import pytest

from engine.core.statechart import create_actor, create_machine, from_callback
from tests.statechart.tracking import track_entries


def _send_all(actor, *event_types):
    for event_type in event_types:
        actor.send({"type": event_type})


def _power_switch_config(hist):
    return {
        "initial": "on",
        "states": {
            "on": {
                "initial": "first",
                "states": {"first": {"on": {"SWITCH": "second"}}, "second": {}, "hist": hist},
                "on": {"POWER": "off"},
            },
            "off": {"on": {"POWER": "on.hist"}},
        },
    }


# ---------------------------------------------------------------------------
# history states


@pytest.mark.parametrize(
    "hist",
    [{"type": "history", "history": "shallow"}, {"type": "history"}],
    ids=["explicit_shallow", "default_type"],
)
def test_history_returns_to_the_most_recently_visited_child(hist):
    actor = create_actor(create_machine(_power_switch_config(hist))).start()
    _send_all(actor, "SWITCH", "POWER")
    assert actor.get_snapshot().value == "off"
    actor.send({"type": "POWER"})
    assert actor.get_snapshot().value == {"on": "second"}


@pytest.mark.parametrize(
    "hist",
    [{"type": "history", "history": "shallow"}, {"type": "history"}],
    ids=["explicit_shallow", "default_type"],
)
def test_history_without_a_record_enters_the_initial_child(hist):
    machine = create_machine(
        {
            "initial": "off",
            "states": {
                "off": {"on": {"POWER": "on.hist"}},
                "on": {"initial": "first", "states": {"first": {}, "second": {}, "hist": hist}},
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "POWER"})
    assert actor.get_snapshot().value == {"on": "first"}


def test_history_remembers_a_state_left_through_an_eventless_transition():
    machine = create_machine(
        {
            "initial": "idle",
            "states": {
                "idle": {
                    "id": "idle",
                    "initial": "absent",
                    "states": {
                        "absent": {"on": {"DEPLOY": "#deploy"}},
                        "present": {"on": {"DEPLOY": "#deploy", "DESTROY": "#destroy"}},
                        "hist": {"type": "history"},
                    },
                },
                "deploy": {
                    "id": "deploy",
                    "on": {"SUCCESS": "idle.present", "FAILURE": "idle.hist"},
                },
                "destroy": {"id": "destroy", "always": [{"target": "idle.absent"}]},
            },
        }
    )
    actor = create_actor(machine).start()
    _send_all(actor, "DEPLOY", "SUCCESS", "DESTROY")
    assert actor.get_snapshot().value == {"idle": "absent"}
    _send_all(actor, "DEPLOY", "FAILURE")
    assert actor.get_snapshot().value == {"idle": "absent"}


def test_reentering_transition_to_a_history_state_reenters_the_remembered_child():
    log = []
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {
                    "on": {"REENTER": {"target": "#b_hist", "reenter": True}},
                    "initial": "a1",
                    "states": {
                        "a1": {"on": {"NEXT": "a2"}},
                        "a2": {
                            "entry": lambda: log.append("a2 entered"),
                            "exit": lambda: log.append("a2 exited"),
                        },
                        "a3": {"type": "history", "id": "b_hist"},
                    },
                }
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    log.clear()
    actor.send({"type": "REENTER"})
    assert log == ["a2 exited", "a2 entered"]
    assert actor.get_snapshot().value == {"a": "a2"}


def test_history_as_the_machines_initial_state_goes_to_its_default_target():
    machine = create_machine(
        {
            "initial": "foo",
            "states": {"foo": {"type": "history", "target": "bar"}, "bar": {}},
        }
    )
    actor = create_actor(machine).start()
    assert actor.get_snapshot().value == "bar"


def test_history_as_the_initial_state_of_a_target_goes_to_its_default_target():
    machine = create_machine(
        {
            "initial": "foo",
            "states": {
                "foo": {"on": {"NEXT": "bar"}},
                "bar": {
                    "initial": "baz",
                    "states": {"baz": {"type": "history", "target": "qwe"}, "qwe": {}},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert actor.get_snapshot().value == {"bar": "qwe"}


def _counter():
    calls = []

    def spy():
        calls.append(1)

    return calls, spy


def test_initial_actions_run_for_a_history_without_default_in_an_unvisited_parent():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "#hist"}},
                "b": {
                    "initial": {"target": "b1", "actions": spy},
                    "states": {"b1": {}, "b2": {"id": "hist", "type": "history"}},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert len(calls) == 1
    assert actor.get_snapshot().value == {"b": "b1"}


@pytest.mark.parametrize("history_kind", ["deep", "shallow"])
def test_history_without_default_in_an_unvisited_parallel_enters_its_defaults(history_kind):
    machine = create_machine(
        {
            "initial": "off",
            "states": {
                "off": {"on": {"GO": "on.hist"}},
                "on": {
                    "type": "parallel",
                    "states": {
                        "regA": {"initial": "a1", "states": {"a1": {}, "a2": {}}},
                        "regB": {"initial": "b1", "states": {"b1": {}, "b2": {}}},
                        "hist": {"type": "history", "history": history_kind},
                    },
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "GO"})
    assert actor.get_snapshot().value == {"on": {"regA": "a1", "regB": "b1"}}


def test_initial_actions_do_not_run_for_a_history_with_default_in_an_unvisited_parent():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "#hist"}},
                "b": {
                    "initial": {"target": "b1", "actions": spy},
                    "states": {
                        "b1": {},
                        "b2": {"id": "hist", "type": "history", "target": "b3"},
                        "b3": {},
                    },
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert calls == []
    assert actor.get_snapshot().value == {"b": "b3"}


def test_parent_entry_runs_when_targeting_its_history_before_it_was_visited():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "#hist"}},
                "b": {
                    "entry": spy,
                    "initial": "b1",
                    "states": {
                        "b1": {},
                        "b2": {"id": "hist", "type": "history", "target": "b3"},
                        "b3": {},
                    },
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert len(calls) == 1


def test_initial_actions_run_when_the_initial_child_is_a_history_state():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "initial": {"target": "b1", "actions": spy},
                    "states": {"b1": {"id": "hist", "type": "history", "target": "b2"}, "b2": {}},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert len(calls) == 1
    assert actor.get_snapshot().value == {"b": "b2"}


def test_initial_actions_do_not_run_for_a_history_without_default_in_a_visited_parent():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "#hist"}},
                "b": {
                    "initial": {"target": "b1", "actions": spy},
                    "states": {"b1": {}, "b2": {"id": "hist", "type": "history"}},
                    "on": {"NEXT": "a"},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert len(calls) == 1
    calls.clear()
    _send_all(actor, "NEXT", "NEXT")
    assert calls == []
    assert actor.get_snapshot().value == {"b": "b1"}


def test_initial_actions_do_not_run_for_a_history_with_default_in_a_visited_parent():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "#hist"}},
                "b": {
                    "initial": {"target": "b1", "actions": spy},
                    "states": {
                        "b1": {},
                        "b2": {"id": "hist", "type": "history", "target": "b3"},
                        "b3": {},
                    },
                    "on": {"NEXT": "a"},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    calls.clear()
    _send_all(actor, "NEXT", "NEXT")
    assert calls == []
    assert actor.get_snapshot().value == {"b": "b3"}


def test_parent_entry_runs_when_targeting_its_history_after_it_was_visited():
    calls, spy = _counter()
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "#hist"}},
                "b": {
                    "entry": spy,
                    "initial": "b1",
                    "states": {
                        "b1": {},
                        "b2": {"id": "hist", "type": "history", "target": "b3"},
                        "b3": {},
                    },
                    "on": {"NEXT": "a"},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    calls.clear()
    _send_all(actor, "NEXT", "NEXT")
    assert len(calls) == 1


def test_invoke_restarts_when_the_remembered_configuration_is_reentered():
    starts = []

    def callback_logic():
        starts.append(1)

    machine = create_machine(
        {
            "initial": "running",
            "states": {
                "running": {
                    "on": {"PING": {"target": "refresh"}},
                    "invoke": {"src": from_callback(callback_logic)},
                },
                "refresh": {"type": "history"},
            },
        }
    )
    actor = create_actor(machine).start()
    assert len(starts) == 1
    starts.clear()
    actor.send({"type": "PING"})
    assert len(starts) == 1
    assert actor.get_snapshot().value == "running"


def test_default_history_entry_does_not_enter_ancestors_outside_the_domain():
    config, flush = track_entries(
        {
            "initial": "closed",
            "states": {
                "closed": {"on": {"BUTTON.CLICK": "open.hist"}},
                "open": {
                    "on": {"BUTTON.CLICK": "closed"},
                    "initial": "first",
                    "states": {"hist": {"type": "history"}, "first": {}, "second": {}},
                },
            },
        }
    )
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "BUTTON.CLICK"})
    assert flush() == ["exit: closed", "enter: open", "enter: open.first"]


def test_restored_history_entry_does_not_enter_ancestors_outside_the_domain():
    config, flush = track_entries(
        {
            "initial": "closed",
            "states": {
                "closed": {"id": "closed", "on": {"BUTTON.CLICK": "open.hist"}},
                "open": {
                    "on": {"BUTTON.CLICK": "closed"},
                    "initial": "first",
                    "states": {
                        "hist": {"type": "history"},
                        "first": {"on": {"NEXT": "second"}},
                        "second": {"on": {"CLOSE": "#closed"}},
                    },
                },
            },
        }
    )
    actor = create_actor(create_machine(config)).start()
    _send_all(actor, "BUTTON.CLICK", "NEXT", "CLOSE")
    flush()
    actor.send({"type": "BUTTON.CLICK"})
    assert flush() == ["exit: closed", "enter: open", "enter: open.second"]


# ---------------------------------------------------------------------------
# deep history states


def _deep_config(history_kind, inner_b_moves):
    p_state = {"on": {"INNER": "Q"}} if inner_b_moves else {}
    return {
        "initial": "on",
        "states": {
            "off": {"on": {"POWER": "on.history"}},
            "on": {
                "initial": "first",
                "states": {
                    "first": {"on": {"SWITCH": "second"}},
                    "second": {
                        "initial": "A",
                        "states": {
                            "A": {"on": {"INNER": "B"}},
                            "B": {"initial": "P", "states": {"P": p_state, "Q": {}}},
                        },
                    },
                    "history": {"history": history_kind},
                },
                "on": {"POWER": "off"},
            },
        },
    }


def test_shallow_history_restores_only_the_first_level():
    actor = create_actor(create_machine(_deep_config("shallow", False))).start()
    _send_all(actor, "SWITCH", "INNER")
    assert actor.get_snapshot().value == {"on": {"second": {"B": "P"}}}
    _send_all(actor, "POWER", "POWER")
    assert actor.get_snapshot().value == {"on": {"second": "A"}}


def test_deep_history_restores_the_nested_configuration():
    actor = create_actor(create_machine(_deep_config("deep", False))).start()
    _send_all(actor, "SWITCH", "INNER", "POWER", "POWER")
    assert actor.get_snapshot().value == {"on": {"second": {"B": "P"}}}


def test_deep_history_restores_the_deepest_configuration():
    actor = create_actor(create_machine(_deep_config("deep", True))).start()
    _send_all(actor, "SWITCH", "INNER", "INNER")
    assert actor.get_snapshot().value == {"on": {"second": {"B": "Q"}}}
    _send_all(actor, "POWER", "POWER")
    assert actor.get_snapshot().value == {"on": {"second": {"B": "Q"}}}


# ---------------------------------------------------------------------------
# parallel history states


def test_shallow_history_of_a_parallel_state_enters_region_defaults():
    machine = create_machine(
        {
            "initial": "off",
            "states": {
                "off": {"on": {"SWITCH": "on", "POWER": "on.hist"}},
                "on": {
                    "type": "parallel",
                    "states": {
                        "A": {
                            "initial": "B",
                            "states": {
                                "B": {"on": {"INNER_A": "C"}},
                                "C": {"initial": "D", "states": {"D": {}, "E": {}}},
                                "hist": {"history": True},
                            },
                        },
                        "K": {
                            "initial": "L",
                            "states": {
                                "L": {},
                                "M": {},
                                "hist": {"history": True},
                                "deepHistory": {"history": "deep"},
                            },
                        },
                        "hist": {"history": True},
                    },
                    "on": {"POWER": "off"},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    _send_all(actor, "SWITCH", "INNER_A")
    assert actor.get_snapshot().value == {"on": {"A": {"C": "D"}, "K": "L"}}
    _send_all(actor, "POWER", "POWER")
    assert actor.get_snapshot().value == {"on": {"A": "B", "K": "L"}}


def test_deep_history_of_a_parallel_state_remembers_first_level_regions():
    machine = create_machine(
        {
            "initial": "off",
            "states": {
                "off": {"on": {"SWITCH": "on", "DEEP_POWER": "on.deepHistory"}},
                "on": {
                    "type": "parallel",
                    "states": {
                        "A": {
                            "initial": "B",
                            "states": {
                                "B": {"on": {"INNER_A": "C"}},
                                "C": {"initial": "D", "states": {"D": {}, "E": {}}},
                                "hist": {"history": True},
                                "deepHistory": {"history": "deep"},
                            },
                        },
                        "K": {
                            "initial": "L",
                            "states": {
                                "L": {},
                                "M": {},
                                "hist": {"history": True},
                                "deepHistory": {"history": "deep"},
                            },
                        },
                        "deepHistory": {"history": "deep"},
                    },
                    "on": {"POWER": "off"},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    _send_all(actor, "SWITCH", "INNER_A", "POWER", "DEEP_POWER")
    assert actor.get_snapshot().value == {"on": {"A": {"C": "D"}, "K": "L"}}


def _two_level_parallel_config(off_on):
    def region(prefix_initial, inner_initial, inner_other, middle, event_type):
        return {
            "initial": prefix_initial,
            "states": {
                prefix_initial: {"on": {event_type: middle}},
                middle: {
                    "initial": inner_initial,
                    "states": {
                        inner_initial: {"on": {event_type: inner_other}},
                        inner_other: {},
                    },
                },
                "hist": {"history": True},
                "deepHistory": {"history": "deep"},
            },
        }

    return {
        "initial": "off",
        "states": {
            "off": {"on": {"SWITCH": "on", **off_on}},
            "on": {
                "type": "parallel",
                "states": {
                    "A": region("B", "D", "E", "C", "INNER_A"),
                    "K": region("L", "N", "O", "M", "INNER_K"),
                    "hist": {"history": True},
                    "shallowHistory": {"history": "shallow"},
                    "deepHistory": {"history": "deep"},
                },
                "on": {"POWER": "off"},
            },
        },
    }


def _drive_two_level(machine, final_event):
    actor = create_actor(machine).start()
    _send_all(actor, "SWITCH", "INNER_A", "INNER_A", "INNER_K", "INNER_K")
    assert actor.get_snapshot().value == {"on": {"A": {"C": "E"}, "K": {"M": "O"}}}
    _send_all(actor, "POWER")
    assert actor.get_snapshot().value == "off"
    _send_all(actor, final_event)
    return actor.get_snapshot().value


def test_deep_history_of_a_parallel_state_reenters_every_region():
    machine = create_machine(_two_level_parallel_config({"DEEP_POWER": "on.deepHistory"}))
    assert _drive_two_level(machine, "DEEP_POWER") == {"on": {"A": {"C": "E"}, "K": {"M": "O"}}}


def test_several_shallow_history_targets_at_once():
    machine = create_machine(_two_level_parallel_config({"PARALLEL_HISTORY": [{"target": ["on.A.hist", "on.K.hist"]}]}))
    assert _drive_two_level(machine, "PARALLEL_HISTORY") == {"on": {"A": {"C": "D"}, "K": {"M": "N"}}}


def test_parallel_reentered_with_history_in_only_some_regions():
    machine = create_machine(
        _two_level_parallel_config({"PARALLEL_SOME_HISTORY": [{"target": ["on.A.C", "on.K.hist"]}]})
    )
    assert _drive_two_level(machine, "PARALLEL_SOME_HISTORY") == {"on": {"A": {"C": "D"}, "K": {"M": "N"}}}


def test_parallel_reentered_with_deep_history_in_every_region():
    machine = create_machine(
        _two_level_parallel_config({"PARALLEL_DEEP_HISTORY": [{"target": ["on.A.deepHistory", "on.K.deepHistory"]}]})
    )
    assert _drive_two_level(machine, "PARALLEL_DEEP_HISTORY") == {"on": {"A": {"C": "E"}, "K": {"M": "O"}}}


# ---------------------------------------------------------------------------
# loose tests at the end of the xstate file


def test_internal_transition_to_history_of_a_never_exited_state_uses_the_default():
    machine = create_machine(
        {
            "initial": "first",
            "states": {
                "first": {"on": {"NEXT": "second.other"}},
                "second": {
                    "initial": "nested",
                    "states": {"nested": {}, "other": {}, "hist": {"history": True}},
                    "on": {"NEXT": {"target": ".hist"}},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert actor.get_snapshot().value == {"second": "other"}
    actor.send({"type": "NEXT"})
    assert actor.get_snapshot().value == {"second": "nested"}


def test_multistage_history_goes_to_the_most_recently_visited_state():
    machine = create_machine(
        {
            "initial": "running",
            "states": {
                "running": {
                    "initial": "normal",
                    "states": {
                        "normal": {"on": {"SWITCH_TURBO": "turbo"}},
                        "turbo": {"on": {"SWITCH_TURBO": "normal"}},
                        "H": {"history": True},
                    },
                    "on": {"POWER": "off"},
                },
                "starting": {"on": {"STARTED": "running.H"}},
                "off": {"on": {"POWER": "starting"}},
            },
        }
    )
    actor = create_actor(machine).start()
    _send_all(actor, "SWITCH_TURBO", "POWER", "POWER")
    assert actor.get_snapshot().value == "starting"
    actor.send({"type": "STARTED"})
    assert actor.get_snapshot().value == {"running": "turbo"}


# ---------------------------------------------------------------------------
# reviving history from a persisted snapshot


REVIVE_MACHINE = create_machine(_power_switch_config({"type": "history"}))


def _source_snapshots():
    """Run the switch machine to "off" with "second" remembered; hand back (persisted JSON, live snapshot)."""
    source = create_actor(REVIVE_MACHINE).start()
    _send_all(source, "SWITCH", "POWER")
    persisted = json.loads(json.dumps(source.get_persisted_snapshot()))
    live = source.get_snapshot()
    source.stop()
    return persisted, live


def _history_key(persisted):
    """The key under which the persisted snapshot keeps history (docs say ``history``; xstate uses ``historyValue``)."""
    for key in ("history", "historyValue", "history_value"):
        if key in persisted:
            return key
    raise AssertionError(f"persisted snapshot has no history entry: {sorted(persisted)}")


def test_history_is_restored_from_a_stringified_snapshot():
    persisted, _ = _source_snapshots()
    assert persisted["value"] == "off"
    actor = create_actor(REVIVE_MACHINE, snapshot=persisted).start()
    actor.send({"type": "POWER"})
    assert actor.get_snapshot().value == {"on": "second"}


def test_unresolvable_history_ids_are_dropped():
    persisted, _ = _source_snapshots()
    key = _history_key(persisted)
    history = persisted[key]
    assert history, "the source actor should have recorded history for on.hist"
    # point every remembered state at an id that does not exist
    broken = {
        hist_id: [{**entry, "id": "nonexistent"} if isinstance(entry, dict) else "nonexistent" for entry in entries]
        for hist_id, entries in history.items()
    }
    fake = {**persisted, key: broken}
    assert fake["value"] == "off"

    actor = create_actor(REVIVE_MACHINE, snapshot=fake).start()
    actor.send({"type": "POWER"})
    assert actor.get_snapshot().status == "active", actor.get_snapshot().error
    assert actor.get_snapshot().value == {"on": "first"}
    assert actor.get_persisted_snapshot()[key] == {}


def test_history_is_restored_from_a_live_snapshot():
    _, live = _source_snapshots()
    assert live.value == "off"
    actor = create_actor(REVIVE_MACHINE, snapshot=live).start()
    actor.send({"type": "POWER"})
    assert actor.get_snapshot().value == {"on": "second"}


@pytest.mark.parametrize("bad_history", [None, "<missing>", 42, "foo", True, False])
def test_non_mapping_history_in_a_persisted_snapshot_is_treated_as_empty(bad_history):
    persisted, _ = _source_snapshots()
    key = _history_key(persisted)
    fake = dict(persisted)
    if bad_history == "<missing>":
        del fake[key]
    else:
        fake[key] = bad_history
    assert fake["value"] == "off"

    actor = create_actor(REVIVE_MACHINE, snapshot=fake).start()
    actor.send({"type": "POWER"})
    assert actor.get_snapshot().status == "active", actor.get_snapshot().error
    assert actor.get_snapshot().value == {"on": "first"}
    assert actor.get_persisted_snapshot()[key] == {}
