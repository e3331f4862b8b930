"""`lab`: a small Workflow with one of each thing the simulator shows, written to be played by hand.

- the researcher's `finish` has a guard on the context (`found > 0`): false until a search has come back;
- `search` enters `searching`, which runs the Effect `lookup`: the pick is outstanding until the Effect is done;
- `researching` has a timer: after a minute the run ends in `expired`;
- the Gate `desk` answers `approve`, whose first transition's guard reads the event (`event.ok`), so it is decided
  only when the answer comes, and whose second transition is guarded by `sent_by("desk")`.

The e2e tests copy this file into the live server's workflows folder as `lab.py`.
"""

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, effect, fail, from_pick, jr2_setup, scripted, sent_by


class Door(BaseModel):
    topic: str = Field(description="What to look into.")


class SearchInput(BaseModel):
    query: str = Field(description="What to search for.")


class FinishInput(BaseModel):
    summary: str = Field(description="What was found, in a few lines.")


class ApproveInput(BaseModel):
    ok: bool = Field(description="Whether the summary is good enough.")
    note: str = Field(default="", description="A note for the researcher.")


def lookup(query: str) -> dict:
    """The Effect's function (never called by the simulator: the user gives its result)."""
    return {"query": query, "hits": 1}


search = define_event(name="search", input=SearchInput, description="Search the library once.")
finish = define_event(name="finish", input=FinishInput, description="Hand in the summary. Then stop.")
approve = define_event(name="approve", input=ApproveInput, description="Approve the summary, or send it back.")

machine = jr2_setup(
    events=[search, finish, approve],
    actors={
        "researcher": agent(
            model="anthropic/claude-haiku-5-5",
            instructions="You look things up, then hand in a short summary.",
            workspace="none",
        ),
        "lookup": effect.call(lookup),
        "fail": fail(),
    },
).create_machine(
    {
        "id": "lab",
        "input": Door,
        "context": lambda input: {"topic": input.topic, "found": 0, "summary": ""},
        "on": {"agent.fault": ".failed"},
        "initial": "researching",
        "states": {
            "researching": {
                "invoke": {"src": "researcher", "input": lambda context: {"prompt": "Look into " + context["topic"]}},
                "after": {60000: "expired"},
                "on": {
                    "finish": {
                        "guard": lambda context: context["found"] > 0,
                        "target": "review",
                        "actions": assign(summary=lambda event: event.summary),
                    }
                },
                "initial": "idle",
                "states": {
                    "idle": {"on": {"search": "searching"}},
                    "searching": {
                        "invoke": {
                            "src": "lookup",
                            "input": from_pick(fill=lambda params: {"query": params["query"]}),
                            "onDone": {
                                "target": "idle",
                                "actions": assign(found=lambda context: context["found"] + 1),
                            },
                            "onError": {
                                "target": "idle",
                                "actions": answer(lambda event: "The search failed: " + str(event.error)),
                            },
                        }
                    },
                },
            },
            "review": {
                "invoke": {
                    "src": "gate",
                    "id": "desk",
                    "input": lambda context: {"meta": {"summary": context["summary"]}},
                },
                "on": {
                    "approve": [
                        {"guard": lambda event: event.ok, "target": "approved"},
                        {"guard": sent_by("desk"), "target": "researching"},
                    ]
                },
            },
            "approved": {"type": "final"},
            "expired": {"type": "final"},
            "failed": {"invoke": {"src": "fail", "input": {"reason": "the researcher could not go on"}}},
        },
        "output": lambda context: {"summary": context["summary"]},
    }
)


@scripted("lab.researcher")
def offline_researcher(turn):
    """The offline stand-in: search once, then finish."""
    if "search" in turn.allowed_picks and not turn.answers:
        return ("search", {"query": "anything"})
    return ("finish", {"summary": "Found one thing."})
