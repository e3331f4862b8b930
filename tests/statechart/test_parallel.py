"""Parallel (orthogonal) states: values, transitions across regions, entry/exit sets.

Behaviour ported from xstate's packages/core/test/parallel.test.ts (xstate 5.32.5).
"""

import pytest

from engine.core.statechart import assign, create_actor, create_machine, raise_
from tests.statechart.tracking import track_entries


def _noop_actions(*names):
    def noop():
        pass

    return {name: noop for name in names}


def _selection_status():
    def clicked_away():
        return {"singleClickCanvas": [{"target": "SelectedNone", "actions": ["selectNone"]}]}

    return {
        "initial": "SelectedNone",
        "on": {
            "singleClickActivity": [{"target": ".SelectedActivity", "actions": ["selectActivity"]}],
            "singleClickLink": [{"target": ".SelectedLink", "actions": ["selectLink"]}],
        },
        "states": {
            "SelectedNone": {"entry": ["redraw"]},
            "SelectedActivity": {"entry": ["redraw"], "on": clicked_away()},
            "SelectedLink": {"entry": ["redraw"], "on": clicked_away()},
        },
    }


COMPOSER_MACHINE = create_machine(
    {
        "initial": "ReadOnly",
        "states": {
            "ReadOnly": {
                "id": "ReadOnly",
                "initial": "StructureEdit",
                "entry": ["selectNone"],
                "states": {
                    "StructureEdit": {
                        "id": "StructureEditRO",
                        "type": "parallel",
                        "on": {"switchToProjectManagement": [{"target": "ProjectManagement"}]},
                        "states": {
                            "SelectionStatus": _selection_status(),
                            "ClipboardStatus": {
                                "initial": "Empty",
                                "states": {
                                    "Empty": {
                                        "entry": ["emptyClipboard"],
                                        "on": {
                                            "cutInClipboardSuccess": [{"target": "FilledByCut"}],
                                            "copyInClipboardSuccess": [{"target": "FilledByCopy"}],
                                        },
                                    },
                                    "FilledByCopy": {
                                        "on": {
                                            "cutInClipboardSuccess": [{"target": "FilledByCut"}],
                                            "copyInClipboardSuccess": [{"target": "FilledByCopy"}],
                                            "pasteFromClipboardSuccess": [{"target": "FilledByCopy"}],
                                        }
                                    },
                                    "FilledByCut": {
                                        "on": {
                                            "cutInClipboardSuccess": [{"target": "FilledByCut"}],
                                            "copyInClipboardSuccess": [{"target": "FilledByCopy"}],
                                            "pasteFromClipboardSuccess": [{"target": "Empty"}],
                                        }
                                    },
                                },
                            },
                        },
                    },
                    "ProjectManagement": {
                        "id": "ProjectManagementRO",
                        "type": "parallel",
                        "on": {"switchToStructureEdit": [{"target": "StructureEdit"}]},
                        "states": {"SelectionStatus": _selection_status()},
                    },
                },
            }
        },
    },
    # xstate skips unknown named actions silently; our engine refuses them, so register no-ops.
    actions=_noop_actions("selectNone", "selectActivity", "selectLink", "redraw", "emptyClipboard"),
)


def _wak_region(prefix, event_type):
    return {
        "initial": f"{prefix}sonA",
        "states": {
            f"{prefix}sonA": {"entry": f"{prefix}sonAenter", "exit": f"{prefix}sonAexit"},
            f"{prefix}sonB": {"entry": f"{prefix}sonBenter", "exit": f"{prefix}sonBexit"},
        },
        "on": {event_type: f".{prefix}sonB"},
        "entry": f"{prefix}enter",
        "exit": f"{prefix}exit",
    }


WAK_ACTION_LOG = []


def _wak_actions():
    names = [
        f"{prefix}{suffix}"
        for prefix in ("wak1", "wak2")
        for suffix in ("sonAenter", "sonAexit", "sonBenter", "sonBexit", "enter", "exit")
    ]

    def make(name):
        def record():
            WAK_ACTION_LOG.append(name)

        return record

    return {name: make(name) for name in names}


WAK_MACHINE = create_machine(
    {
        "id": "wakMachine",
        "type": "parallel",
        "states": {"wak1": _wak_region("wak1", "WAK1"), "wak2": _wak_region("wak2", "WAK2")},
    },
    actions=_wak_actions(),
)


def _toggle(event_type):
    return {
        "initial": "off",
        "states": {"on": {"on": {event_type: "off"}}, "off": {"on": {event_type: "on"}}},
    }


WORD_MACHINE = create_machine(
    {
        "id": "word",
        "type": "parallel",
        "states": {
            "bold": _toggle("TOGGLE_BOLD"),
            "underline": _toggle("TOGGLE_UNDERLINE"),
            "italics": _toggle("TOGGLE_ITALICS"),
            "list": {
                "initial": "none",
                "states": {
                    "none": {"on": {"BULLETS": "bullets", "NUMBERS": "numbers"}},
                    "bullets": {"on": {"NONE": "none", "NUMBERS": "numbers"}},
                    "numbers": {"on": {"BULLETS": "bullets", "NONE": "none"}},
                },
            },
        },
        "on": {"RESET": "#word"},
    }
)

FLAT_PARALLEL_MACHINE = create_machine(
    {
        "type": "parallel",
        "states": {
            "foo": {},
            "bar": {},
            "baz": {"initial": "one", "states": {"one": {"on": {"E": "two"}}, "two": {}}},
        },
    }
)

RAISING_PARALLEL_MACHINE = create_machine(
    {
        "type": "parallel",
        "states": {
            "OUTER1": {
                "initial": "C",
                "states": {
                    "A": {
                        "entry": [raise_({"type": "TURN_OFF"})],
                        "on": {"EVENT_OUTER1_B": "B", "EVENT_OUTER1_C": "C"},
                    },
                    "B": {
                        "entry": [raise_({"type": "TURN_ON"})],
                        "on": {"EVENT_OUTER1_A": "A", "EVENT_OUTER1_C": "C"},
                    },
                    "C": {
                        "entry": [raise_({"type": "CLEAR"})],
                        "on": {"EVENT_OUTER1_A": "A", "EVENT_OUTER1_B": "B"},
                    },
                },
            },
            "OUTER2": {
                "type": "parallel",
                "states": {
                    "INNER1": {
                        "initial": "ON",
                        "states": {
                            "OFF": {"on": {"TURN_ON": "ON"}},
                            "ON": {"on": {"CLEAR": "OFF"}},
                        },
                    },
                    "INNER2": {
                        "initial": "OFF",
                        "states": {
                            "OFF": {"on": {"TURN_ON": "ON"}},
                            "ON": {"on": {"TURN_OFF": "OFF"}},
                        },
                    },
                },
            },
        },
    }
)


def _ntj(index):
    idle, working = f"STATE_IDLE_{index}", f"STATE_WORKING_{index}"
    return {
        "initial": idle,
        "states": {
            idle: {"on": {f"EVENT_STATE_NTJ{index}_WORK": working}},
            working: {"on": {f"EVENT_STATE_NTJ{index}_IDLE": idle}},
        },
    }


NESTED_PARALLEL_MACHINE = create_machine(
    {
        "type": "parallel",
        "states": {
            "OUTER1": {
                "initial": "STATE_OFF",
                "states": {
                    "STATE_OFF": {"on": {"EVENT_COMPLEX": "STATE_ON", "EVENT_SIMPLE": "STATE_ON"}},
                    "STATE_ON": {
                        "type": "parallel",
                        "states": {"STATE_NTJ0": _ntj(0), "STATE_NTJ1": _ntj(1)},
                    },
                },
            },
            "OUTER2": {
                "initial": "STATE_OFF",
                "states": {
                    "STATE_OFF": {
                        "on": {
                            "EVENT_COMPLEX": "STATE_ON_COMPLEX",
                            "EVENT_SIMPLE": "STATE_ON_SIMPLE",
                        }
                    },
                    "STATE_ON_SIMPLE": {},
                    "STATE_ON_COMPLEX": {
                        "type": "parallel",
                        "states": {
                            "STATE_INNER1": {
                                "initial": "STATE_OFF",
                                "states": {"STATE_OFF": {}, "STATE_ON": {}},
                            },
                            "STATE_INNER2": {
                                "initial": "STATE_OFF",
                                "states": {"STATE_OFF": {}, "STATE_ON": {}},
                            },
                        },
                    },
                },
            },
        },
    }
)

DEEP_FLAT_PARALLEL_MACHINE = create_machine(
    {
        "type": "parallel",
        "states": {
            "X": {},
            "V": {
                "initial": "A",
                "on": {
                    "a": {"target": "V.A"},
                    "b": {"target": "V.B"},
                    "c": {"target": "V.C"},
                },
                "states": {
                    "A": {},
                    "B": {
                        "initial": "BB",
                        "states": {"BB": {"type": "parallel", "states": {"BBB_A": {}, "BBB_B": {}}}},
                    },
                    "C": {},
                },
            },
        },
    }
)


def run_events(machine, from_value, event_types):
    """Resolve ``from_value`` and feed it the events one by one through pure transitions."""
    snapshot = machine.resolve_state({"value": from_value, "context": {}})
    for event_type in event_types:
        snapshot, _ = machine.transition(snapshot, {"type": event_type})
    return snapshot


# ---------------------------------------------------------------------------


def test_initial_value_has_every_region():
    snapshot = create_actor(WORD_MACHINE).get_snapshot()
    assert snapshot.value == {"bold": "off", "italics": "off", "underline": "off", "list": "none"}


_ALL_OFF = {"bold": "off", "italics": "off", "underline": "off", "list": "none"}
_UNDERLINED_BULLETS = {"bold": "off", "italics": "off", "underline": "on", "list": "bullets"}


@pytest.mark.parametrize(
    ("from_value", "event_types", "expected"),
    [
        ({"bold": "off"}, ["TOGGLE_BOLD"], {**_ALL_OFF, "bold": "on"}),
        ({"bold": "on"}, ["TOGGLE_BOLD"], _ALL_OFF),
        (
            _UNDERLINED_BULLETS,
            ["TOGGLE_BOLD", "TOGGLE_ITALICS"],
            {"bold": "on", "italics": "on", "underline": "on", "list": "bullets"},
        ),
        (_UNDERLINED_BULLETS, ["RESET"], _ALL_OFF),
    ],
    ids=["bold_off_toggle", "bold_on_toggle", "bold_then_italics", "reset_to_root"],
)
def test_word_machine_transitions(from_value, event_types, expected):
    assert run_events(WORD_MACHINE, from_value, event_types).value == expected


def test_value_keeps_untouched_regions_after_a_region_moves():
    machine = create_machine(
        {
            "type": "parallel",
            "states": {
                "wak1": {
                    "initial": "wak1sonA",
                    "states": {"wak1sonA": {}, "wak1sonB": {}},
                    "on": {"WAK1": ".wak1sonB"},
                },
                "wak2": {"initial": "wak2sonA", "states": {"wak2sonA": {}}},
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "WAK1"})
    assert actor.get_snapshot().value == {"wak1": "wak1sonB", "wak2": "wak2sonA"}


def test_value_keeps_untouched_regions_with_entry_and_exit_actions():
    WAK_ACTION_LOG.clear()
    actor = create_actor(WAK_MACHINE).start()
    actor.send({"type": "WAK2"})
    assert actor.get_snapshot().value == {"wak1": "wak1sonA", "wak2": "wak2sonB"}
    # the WAK2 transition touches only the second region
    assert WAK_ACTION_LOG[-2:] == ["wak2sonAexit", "wak2sonBenter"]


def test_regions_without_child_states_have_empty_values():
    snapshot = create_actor(FLAT_PARALLEL_MACHINE).get_snapshot()
    assert snapshot.value == {"foo": {}, "bar": {}, "baz": "one"}


def test_regions_without_child_states_stay_empty_after_a_transition():
    actor = create_actor(FLAT_PARALLEL_MACHINE).start()
    actor.send({"type": "E"})
    assert actor.get_snapshot().value == {"foo": {}, "bar": {}, "baz": "two"}


def test_relative_target_inside_a_parallel_region():
    actor = create_actor(COMPOSER_MACHINE).start()
    actor.send({"type": "singleClickActivity"})
    assert actor.get_snapshot().value == {
        "ReadOnly": {"StructureEdit": {"SelectionStatus": "SelectedActivity", "ClipboardStatus": "Empty"}}
    }


def test_event_raised_by_initial_entry_reaches_other_regions():
    machine = create_machine(
        {
            "type": "parallel",
            "states": {
                "OUTER1": {
                    "initial": "B",
                    "states": {"A": {}, "B": {"entry": raise_({"type": "CLEAR"})}},
                },
                "OUTER2": {
                    "type": "parallel",
                    "states": {
                        "INNER1": {
                            "initial": "ON",
                            "states": {"OFF": {}, "ON": {"on": {"CLEAR": "OFF"}}},
                        },
                        "INNER2": {"initial": "OFF", "states": {"OFF": {}, "ON": {}}},
                    },
                },
            },
        }
    )
    assert create_actor(machine).get_snapshot().value == {
        "OUTER1": "B",
        "OUTER2": {"INNER1": "OFF", "INNER2": "OFF"},
    }


def test_raised_events_drive_other_regions_of_a_parallel_state():
    actor = create_actor(RAISING_PARALLEL_MACHINE).start()
    assert actor.get_snapshot().value == {
        "OUTER1": "C",
        "OUTER2": {"INNER1": "OFF", "INNER2": "OFF"},
    }
    actor.send({"type": "EVENT_OUTER1_B"})
    assert actor.get_snapshot().value == {
        "OUTER1": "B",
        "OUTER2": {"INNER1": "ON", "INNER2": "ON"},
    }


def test_simultaneous_orthogonal_transitions_all_apply():
    saved = []
    machine = create_machine(
        {
            "id": "yamlEditor",
            "type": "parallel",
            "context": {"value": ""},
            "states": {
                "editing": {"on": {"CHANGE": {"actions": assign(value=lambda event: event["value"])}}},
                "status": {
                    "initial": "unsaved",
                    "states": {
                        "unsaved": {"on": {"SAVE": {"target": "saved", "actions": "save"}}},
                        "saved": {"on": {"CHANGE": "unsaved"}},
                    },
                },
            },
        },
        actions={"save": lambda: saved.append(True)},
    )
    actor = create_actor(machine).start()
    actor.send({"type": "SAVE"})
    assert actor.get_snapshot().value == {"editing": {}, "status": "saved"}
    actor.send({"type": "CHANGE", "value": "something"})

    assert actor.get_snapshot().value == {"editing": {}, "status": "unsaved"}
    assert actor.get_snapshot().context == {"value": "something"}
    assert saved == [True]


def test_initial_transition_actions_of_a_region_run_when_the_machine_starts():
    calls = []

    def spy():
        calls.append(1)

    machine = create_machine(
        {
            "type": "parallel",
            "states": {"a": {"initial": {"target": "a1", "actions": spy}, "states": {"a1": {}}}},
        }
    )
    create_actor(machine).start()
    assert len(calls) == 1


def test_initial_transition_actions_of_a_region_run_when_the_parallel_state_is_targeted():
    calls = []

    def spy():
        calls.append(1)

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "type": "parallel",
                    "states": {"c": {"initial": {"target": "c1", "actions": spy}, "states": {"c1": {}}}},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    assert calls == []
    actor.send({"type": "NEXT"})
    assert len(calls) == 1


# ---------------------------------------------------------------------------
# transitions with nested parallel states


def test_nested_parallel_simple_path():
    actor = create_actor(NESTED_PARALLEL_MACHINE).start()
    actor.send({"type": "EVENT_SIMPLE"})
    actor.send({"type": "EVENT_STATE_NTJ0_WORK"})
    assert actor.get_snapshot().value == {
        "OUTER1": {"STATE_ON": {"STATE_NTJ0": "STATE_WORKING_0", "STATE_NTJ1": "STATE_IDLE_1"}},
        "OUTER2": "STATE_ON_SIMPLE",
    }


def test_nested_parallel_complex_path():
    actor = create_actor(NESTED_PARALLEL_MACHINE).start()
    actor.send({"type": "EVENT_COMPLEX"})
    actor.send({"type": "EVENT_STATE_NTJ0_WORK"})
    assert actor.get_snapshot().value == {
        "OUTER1": {"STATE_ON": {"STATE_NTJ0": "STATE_WORKING_0", "STATE_NTJ1": "STATE_IDLE_1"}},
        "OUTER2": {"STATE_ON_COMPLEX": {"STATE_INNER1": "STATE_OFF", "STATE_INNER2": "STATE_OFF"}},
    }


def test_flat_parallel_state_nested_in_a_compound_state_value():
    machine = create_machine(
        {
            "initial": "A",
            "states": {
                "A": {"on": {"to-B": "B"}},
                "B": {"type": "parallel", "states": {"C": {}, "D": {}}},
            },
            "on": {"to-A": ".A"},
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "to-B"})
    assert actor.get_snapshot().value == {"B": {"C": {}, "D": {}}}
    actor.send({"type": "to-A"})
    assert actor.get_snapshot().value == "A"


def test_deep_flat_parallel_states():
    actor = create_actor(DEEP_FLAT_PARALLEL_MACHINE).start()
    actor.send({"type": "a"})
    actor.send({"type": "c"})
    assert actor.get_snapshot().value == {"V": "C", "X": {}}
    actor.send({"type": "b"})
    assert actor.get_snapshot().value == {
        "V": {"B": {"BB": {"BBB_A": {}, "BBB_B": {}}}},
        "X": {},
    }


def test_targetless_and_targeted_transitions_in_sibling_regions_do_not_clash():
    calls = []
    machine = create_machine(
        {
            "id": "pipeline",
            "type": "parallel",
            "states": {
                "foo": {"on": {"UPDATE": {"actions": lambda: calls.append(1)}}},
                "bar": {
                    "on": {"UPDATE": ".baz"},
                    "initial": "idle",
                    "states": {"idle": {}, "baz": {}},
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "UPDATE"})
    snapshot = actor.get_snapshot()
    assert snapshot.status == "active"
    assert snapshot.value == {"foo": {}, "bar": "baz"}
    assert calls == [1]


# ---------------------------------------------------------------------------
# other


def test_region_can_target_a_state_in_an_orthogonal_region():
    machine = create_machine(
        {
            "type": "parallel",
            "states": {
                "Pages": {
                    "initial": "About",
                    "states": {"About": {"id": "About"}, "Dashboard": {"id": "Dashboard"}},
                },
                "Menu": {
                    "initial": "Closed",
                    "states": {
                        "Closed": {"id": "Closed", "on": {"toggle": "#Opened"}},
                        "Opened": {
                            "id": "Opened",
                            "on": {
                                "toggle": "#Closed",
                                "go to dashboard": {"target": ["#Dashboard", "#Opened"]},
                            },
                        },
                    },
                },
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "toggle"})
    actor.send({"type": "go to dashboard"})
    snapshot = actor.get_snapshot()
    assert snapshot.matches({"Menu": "Opened", "Pages": "Dashboard"})
    assert not snapshot.matches({"Pages": "About"})


def test_reentering_self_transition_inside_a_region_reenters_the_state():
    machine = create_machine(
        {
            "id": "test",
            "context": {"log": []},
            "type": "parallel",
            "states": {
                "foo": {
                    "initial": "foobar",
                    "states": {
                        "foobar": {"on": {"GOTO_FOOBAZ": "foobaz"}},
                        "foobaz": {
                            "entry": assign(log=lambda context: [*context["log"], "entered foobaz"]),
                            "on": {"GOTO_FOOBAZ": {"target": "foobaz", "reenter": True}},
                        },
                    },
                },
                "bar": {},
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "GOTO_FOOBAZ"})
    actor.send({"type": "GOTO_FOOBAZ"})
    assert len(actor.get_snapshot().context["log"]) == 2


def _finishing_region():
    return {
        "initial": "idle",
        "states": {"idle": {"on": {"FINISH": "finished"}}, "finished": {"type": "final"}},
    }


def test_parallel_done_event_when_all_regions_finish_on_one_event():
    completed = []
    machine = create_machine(
        {
            "id": "test",
            "initial": "p",
            "states": {
                "p": {
                    "type": "parallel",
                    "states": {
                        "a": _finishing_region(),
                        "b": _finishing_region(),
                        "c": _finishing_region(),
                    },
                    "onDone": "success",
                },
                "success": {"type": "final"},
            },
        }
    )
    actor = create_actor(machine)
    actor.subscribe(complete=lambda: completed.append(True))
    actor.start()
    assert completed == []
    actor.send({"type": "FINISH"})
    assert completed == [True]
    assert actor.get_snapshot().value == "success"


def test_history_pseudostate_directly_in_a_parallel_state_does_not_block_done():
    def waiting(name):
        return {
            "initial": f"wait_{name}",
            "states": {
                f"wait_{name}": {"on": {f"finish_{name}": {"target": "done"}}},
                "done": {"type": "final"},
            },
        }

    machine = create_machine(
        {
            "initial": "parallelSteps",
            "states": {
                "parallelSteps": {
                    "type": "parallel",
                    "states": {
                        "hist": {"type": "history"},
                        "one": waiting("one"),
                        "two": waiting("two"),
                    },
                    "onDone": "finished",
                },
                "finished": {},
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "finish_one"})
    actor.send({"type": "finish_two"})
    assert actor.get_snapshot().value == "finished"


def _operation_mode_states():
    return {
        "Operation": {
            "initial": "Waiting",
            "states": {
                "Waiting": {"on": {"TOGGLE_MODE": {"target": "#Demo"}}},
                "Fetching": {},
            },
        },
        "Mode": {"initial": "Normal", "states": {"Normal": {}, "Demo": {"id": "Demo"}}},
    }


def test_source_region_is_reentered_when_targeting_another_region_parallel_root():
    config, flush = track_entries({"type": "parallel", "states": _operation_mode_states()})
    actor = create_actor(create_machine(config))
    actor.start()
    flush()
    actor.send({"type": "TOGGLE_MODE"})
    assert flush() == [
        "exit: Mode.Normal",
        "exit: Mode",
        "exit: Operation.Waiting",
        "exit: Operation",
        "enter: Operation",
        "enter: Operation.Waiting",
        "enter: Mode",
        "enter: Mode.Demo",
    ]


def test_source_region_is_reentered_when_targeting_another_region_nested_parallel():
    config, flush = track_entries(
        {"initial": "a", "states": {"a": {"type": "parallel", "states": _operation_mode_states()}}}
    )
    actor = create_actor(create_machine(config))
    actor.start()
    flush()
    actor.send({"type": "TOGGLE_MODE"})
    assert flush() == [
        "exit: a.Mode.Normal",
        "exit: a.Mode",
        "exit: a.Operation.Waiting",
        "exit: a.Operation",
        "enter: a.Operation",
        "enter: a.Operation.Waiting",
        "enter: a.Mode",
        "enter: a.Mode.Demo",
    ]


def test_targetless_transition_on_a_parallel_root_enters_and_exits_nothing():
    calls = []
    config, flush = track_entries(
        {
            "id": "test",
            "type": "parallel",
            "states": {
                "first": {"initial": "disabled", "states": {"disabled": {}, "enabled": {}}},
                "second": {},
            },
            "on": {"MY_EVENT": {"actions": lambda: calls.append(1)}},
        }
    )
    actor = create_actor(create_machine(config))
    actor.start()
    flush()
    actor.send({"type": "MY_EVENT"})
    assert flush() == []
    assert calls == [1]


def test_targetless_transition_in_one_region_enters_and_exits_nothing():
    calls = []
    config, flush = track_entries(
        {
            "id": "test",
            "type": "parallel",
            "states": {
                "first": {
                    "initial": "disabled",
                    "states": {"disabled": {}, "enabled": {}},
                    "on": {"MY_EVENT": {"actions": lambda: calls.append(1)}},
                },
                "second": {},
            },
        }
    )
    actor = create_actor(create_machine(config))
    actor.start()
    flush()
    actor.send({"type": "MY_EVENT"})
    assert flush() == []
    assert calls == [1]
