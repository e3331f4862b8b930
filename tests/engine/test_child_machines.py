"""A child Machine has its own events and Agents: it runs as a nested Session whose parties are named
`<invoke id>/<name>`, and its end is the invoke's done (a reply) or error."""

from pydantic import BaseModel, Field

from engine import Session, agent, answer, assign, define_event, jr2_setup
from engine.core.outputs import PickAnswered, TurnEnded, TurnStarted


class Topic(BaseModel):
    topic: str = Field(description="What to research.")


class Finding(BaseModel):
    finding: str = Field(description="What was found.")


class Report(BaseModel):
    report: str = Field(description="The final report.")


def build():
    found = define_event(name="found", input=Finding, description="Report what you found. Then stop.")
    researcher = jr2_setup(
        events=[found],
        actors={
            "scout": agent(model="script/scout", instructions="You research one topic."),
        },
    ).create_machine(
        {
            "id": "research",
            "context": lambda input: {"topic": input["topic"]},
            "initial": "looking",
            "states": {
                "looking": {
                    "invoke": {"src": "scout", "input": lambda context: {"prompt": "Research " + context["topic"]}},
                    "on": {"found": {"target": "done", "actions": assign(finding=lambda event: event.finding)}},
                },
                "done": {"type": "final"},
            },
            "output": lambda context: {"finding": context["finding"]},
        }
    )
    research = define_event(name="research", input=Topic, description="Send a scout to research a topic.")
    finish = define_event(name="finish", input=Report, description="Finish with the report.")
    return jr2_setup(
        events=[research, finish],
        actors={
            "lead": agent(model="script/lead", instructions="You lead the research."),
            "research": researcher,
        },
    ).create_machine(
        {
            "id": "study",
            "on": {"agent.fault": ".halted"},
            "initial": "leading",
            "context": {},
            "states": {
                "leading": {
                    "invoke": {"src": "lead", "input": {"prompt": "Write a report."}},
                    "initial": "idle",
                    "on": {"finish": {"target": "reported", "actions": assign(report=lambda event: event.report)}},
                    "states": {
                        "idle": {
                            "on": {
                                "research": {
                                    "target": "researching",
                                    "actions": assign(topic=lambda event: event.topic),
                                }
                            }
                        },
                        "researching": {
                            "invoke": {
                                "id": "scouting",
                                "src": "research",
                                "input": lambda context: {"topic": context["topic"]},
                                "onDone": {
                                    "target": "idle",
                                    "actions": answer(
                                        lambda event, chain: f"{len(chain)} reply: " + event.output["finding"]
                                    ),
                                },
                            }
                        },
                    },
                },
                "reported": {"type": "final"},
                "halted": {"type": "final"},
            },
            "output": lambda context: {"report": context.get("report")},
        }
    )


def test_a_child_machines_agent_gets_a_turn_and_its_output_answers_the_parents_pick():
    machine = build()
    session = Session(machine)
    session.drain()
    assert session.pick("lead", "research", {"topic": "tides"}).outcome == "outstanding"
    started = [o for o in session.drain() if isinstance(o, TurnStarted)]
    assert [(o.agent, o.prompt) for o in started] == [("scouting/scout", "Research tides")]
    assert session.allowed_picks("lead") == []
    assert session.allowed_picks("scouting/scout") == ["found"]
    assert [t.agent for t in session.turns] == ["lead", "scouting/scout"]
    assert session.pick("lead", "finish", {"report": "early"}).outcome == "refused"

    result = session.pick("scouting/scout", "found", {"finding": "moon"})
    assert result.outcome == "ended"
    outputs = session.drain()
    assert [o.turn for o in outputs if isinstance(o, TurnEnded)] == ["scouting/turn-2"]
    [answered] = [o for o in outputs if isinstance(o, PickAnswered)]
    assert (answered.event, answered.answer, answered.allowed) == ("research", "1 reply: moon", ("finish", "research"))

    assert session.pick("lead", "finish", {"report": "tides follow the moon"}).outcome == "ended"
    assert (session.status, session.output) == ("done", {"report": "tides follow the moon"})
    replayed = Session.replay(machine, session.journal)
    assert replayed.snapshot == session.snapshot


def test_leaving_the_state_stops_the_child_machines_turns():
    machine = build()
    session = Session(machine)
    session.pick("lead", "research", {"topic": "tides"})
    session.drain()
    session.fault("lead", "gave up")
    ended = [o.turn for o in session.drain() if isinstance(o, TurnEnded)]
    assert sorted(ended) == ["scouting/turn-2", "turn-1"]
    assert session.turn_of("scouting/scout") is None
    assert session.allowed_picks("scouting/scout") == []
    refused = session.pick("scouting/scout", "found", {"finding": "moon"})
    assert refused.outcome == "refused"


def test_a_child_that_finishes_as_it_starts_answers_the_pick_at_once():
    from engine.core.statechart import create_machine

    instant = create_machine(
        {"id": "instant", "initial": "done", "states": {"done": {"type": "final"}}, "output": {"sum": 3}}
    )
    add = define_event(name="add", input=Topic, description="Add it up.")
    machine = jr2_setup(
        events=[add],
        actors={
            "clerk": agent(model="script/clerk", instructions="You add numbers."),
            "adder": instant,
        },
    ).create_machine(
        {
            "id": "ledger",
            "initial": "working",
            "states": {
                "working": {
                    "invoke": {"src": "clerk"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"add": "adding"}},
                        "adding": {"invoke": {"src": "adder", "onDone": "idle"}},
                    },
                }
            },
        }
    )
    session = Session(machine)
    result = session.pick("clerk", "add", {"topic": "sums"})
    assert (result.outcome, result.answer, result.allowed) == ("answered", {"sum": 3}, ("add",))
    assert session.value == {"working": "idle"}


def test_ids_are_unique_in_the_whole_run_child_machines_included():
    session = Session(build())
    first = session.pick("lead", "research", {"topic": "tides"})
    nested = session.pick("scouting/scout", "found", {"finding": "moon"})
    assert first.pick == "pick-1" and nested.pick == "pick-2"
    turns = [o.turn for o in session.drain() if isinstance(o, TurnStarted)]
    assert len(turns) == len({t.rsplit("/", 1)[-1] for t in turns})


def test_a_run_with_a_child_machine_restores_from_json_and_goes_on():
    import json

    machine = build()
    session = Session(machine)
    session.pick("lead", "research", {"topic": "tides"})
    session.drain()
    restored = Session.restore(machine, json.loads(json.dumps(session.to_json())))
    assert [t.agent for t in restored.turns] == ["lead", "scouting/scout"]
    for run in (session, restored):
        assert run.pick("scouting/scout", "found", {"finding": "moon"}).outcome == "ended"
    assert restored.drain() == session.drain()
    assert restored.to_json() == session.to_json()


def test_the_seats_listing_holds_the_child_machines_seats_under_the_invoking_state():
    assert build().seats_text("study_file").splitlines() == [
        'seats: workflow "study_file" — who may send what, per state',
        "  study.leading agent:lead: [finish, research]",
        '  study.leading.researching child Machine "research" (invoke scouting; its parties are named '
        "scouting/<name>):",
        "    research.looking agent:scout: [found]",
    ]
