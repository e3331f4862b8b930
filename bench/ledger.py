"""The ledger: a workflow that makes big runs, for the Console's big-run benchmark (bench/big_run.py) and its tests.

A workflow file like any other (it defines `machine`), self-contained so a test can copy it into a workflows
folder. Its scripted clerk takes `notes` notes in laps of `lap` (one Turn per lap: a prompt, then a reply and an
answer per pick), then asks at a Gate; the reply moves the run to `ticking`, whose Gate `desk` takes `tick`
without leaving (one journal entry each, so a run can be given any number of steps) and `close`, which hands the
ledger to the child Machine `archive` and ends the run.

    python -m bench.big_run     # uses it; tests/console/test_feeds.py and tests/e2e/test_browser_big.py too
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, fail, jr2_setup, scripted

PROMPT = re.compile(r"Take (\d+) notes in laps of (\d+), then ask the desk\. (\d+) so far\.")


class Empty(BaseModel):
    pass


class Note(BaseModel):
    text: str = Field(description="One finding, in a sentence or two.")


class Ask(BaseModel):
    question: str = Field(description="One question for the desk.")


class Reply(BaseModel):
    text: str = Field(description="The desk's answer.")


class Door(BaseModel):
    notes: int = Field(ge=1, description="How many notes to take.")
    lap: int = Field(ge=1, description="Notes per Turn.")


def note_text(n: int) -> str:
    """A note with markup in it, so every page that shows it must escape it."""
    return f'Finding {n}: the parser drops a trailing <br/> & keeps the "smart" quotes in entry {n}.'


@scripted("ledger.clerk")
def clerk(turn: Any) -> tuple[str, dict[str, Any]]:
    """`note` until the count, `lap` after every `lap` notes (a new Turn), then `ask` at the Gate."""
    found = PROMPT.fullmatch(turn.prompt)
    if found is None:
        return ("ask", {"question": "What am I to do?"})
    total, lap, base = int(found[1]), int(found[2]), int(found[3])
    noted = base + sum(1 for a in turn.answers if a.startswith("Noted #"))
    if noted >= total:
        return ("ask", {"question": f"I took {noted} notes. Shall I file them?"})
    if len(turn.answers) >= lap:
        return ("lap", {})
    return ("note", {"text": note_text(noted + 1)})


archive = jr2_setup(events=[], actors={}).create_machine(
    {
        "id": "archive",
        "initial": "packing",
        "states": {"packing": {"always": "sealed"}, "sealed": {"type": "final"}},
    }
)

machine = jr2_setup(
    events=[
        define_event(name="note", input=Note, description="Write down one finding."),
        define_event(name="lap", input=Empty, description="Start a fresh page (a new Turn)."),
        define_event(name="ask", input=Ask, description="Ask the desk; its reply is the answer."),
        define_event(name="reply", input=Reply, description="Answer the clerk."),
        define_event(name="tick", input=Empty, description="One more entry in the ledger."),
        define_event(name="close", input=Empty, description="Close the ledger and archive it."),
    ],
    actors={
        "clerk": agent(model="script/ledger.clerk", instructions="You keep the ledger."),
        "archive": archive,
        "fail": fail(),
    },
).create_machine(
    {
        "id": "ledger",
        "input": Door,
        "context": lambda input: {"notes": input.notes, "lap": input.lap, "count": 0, "ticks": 0},
        "on": {"agent.fault": ".failed"},
        "initial": "writing",
        "states": {
            "writing": {
                "invoke": {
                    "src": "clerk",
                    "input": lambda context: {
                        "prompt": f"Take {context['notes']} notes in laps of {context['lap']}, then ask the desk. "
                        f"{context['count']} so far."
                    },
                },
                "on": {
                    "note": {
                        "actions": [
                            assign(count=lambda context: context["count"] + 1),
                            answer(lambda context: f"Noted #{context['count']}."),
                        ]
                    },
                    "lap": {"target": "writing", "reenter": True},
                },
                "initial": "idle",
                "states": {
                    "idle": {"on": {"ask": "asking"}},
                    "asking": {
                        "invoke": {"src": "gate"},
                        "on": {
                            "reply": {
                                "target": "#ledger.ticking",
                                "actions": answer(lambda event: "Filed: " + event.text),
                            }
                        },
                    },
                },
            },
            "ticking": {
                "invoke": {"src": "gate", "id": "desk"},
                "on": {"tick": {"actions": assign(ticks=lambda context: context["ticks"] + 1)}, "close": "archiving"},
            },
            "archiving": {"invoke": {"src": "archive", "id": "archive", "onDone": "closed"}},
            "closed": {"type": "final"},
            "failed": {
                "invoke": {
                    "src": "fail",
                    "input": lambda event: {"reason": "the clerk's Turn faulted: " + str(event.get("reason", ""))},
                }
            },
        },
        "output": lambda context: {"count": context["count"], "ticks": context["ticks"]},
    }
)
