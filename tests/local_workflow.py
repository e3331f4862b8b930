"""`notes_once`: workflows/notes.py with one change, for a 135M model (tests/providers/test_local_real.py,
bench/local_model.py).

`ask` is allowed only until the editor has replied, so each state of the writer's Turn has exactly one Allowed pick,
which the local provider names in `tool_choice` (`JR2_LOCAL_TOOL_CHOICE=allowed`). Why not `notes` itself: after
the editor's reply `notes` allows both `ask` and `done`, and SmolLM2-135M, choosing the tool under llama.cpp's
grammar at temperature 0, asks again every time (4 of 4 phrasings of the reply tried, "No more questions: call done
now" among them), so a run of `notes` never ends on it. The strings have `max_length`s, which the grammar enforces
too, so the model cannot ramble until its context is full.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, fail, jr2_setup
from engine.core.workflow import Machine
from tests.llama_server import MODEL

__all__ = ["notes_once", "DOOR", "REPLY", "DIALS"]

DOOR = {"changes": "Faster start-up.\nA new export button."}
REPLY = "Admins of small teams; lead with the export button."
DIALS = {"temperature": 0, "max_tokens": 256}


class AskInput(BaseModel):
    question: str = Field(description="One question for the editor.", max_length=160)


class DoneInput(BaseModel):
    notes: str = Field(description="The release notes, in Markdown.", max_length=400)


class ReplyInput(BaseModel):
    text: str = Field(description="The answer, in prose.")


class Door(BaseModel):
    changes: str = Field(description="The changes in this release, one on each line.")


def notes_once() -> Machine:
    """workflows/notes.py with `ask` allowed only before the editor's reply (see the module's docstring)."""
    ask = define_event(name="ask", input=AskInput, description="Ask the editor one question.")
    done = define_event(name="done", input=DoneInput, description="Call this once, with the finished notes.")
    reply = define_event(name="reply", input=ReplyInput, description="Answer the writer's question.")
    return jr2_setup(
        events=[ask, done, reply],
        actors={
            "writer": agent(
                model=f"local/{MODEL}",
                instructions="You write short release notes. Ask the editor one question, then finish.",
                dials=DIALS,
            ),
            "fail": fail(),
        },
    ).create_machine(
        {
            "id": "notes_once",
            "input": Door,
            "context": lambda input: {"changes": input.changes, "replies": 0},
            "on": {"agent.fault": ".failed"},
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {
                        "src": "writer",
                        "input": lambda context: {
                            "prompt": "Write the release notes for these changes:\n" + context["changes"]
                        },
                    },
                    "on": {
                        "done": {
                            "guard": lambda context: context["replies"] > 0,
                            "target": "published",
                            "actions": assign(notes=lambda event: event.notes),
                        }
                    },
                    "initial": "drafting",
                    "states": {
                        "drafting": {
                            "on": {
                                "ask": {
                                    "guard": lambda context: context["replies"] == 0,
                                    "target": "asking",
                                    "actions": assign(question=lambda event: event.question),
                                }
                            }
                        },
                        "asking": {
                            "invoke": {
                                "src": "gate",
                                "input": lambda context: {"meta": {"question": context["question"]}},
                            },
                            "on": {
                                "reply": {
                                    "target": "drafting",
                                    "actions": [
                                        assign(replies=lambda context: context["replies"] + 1),
                                        answer(lambda event: "The editor replied: " + event.text),
                                    ],
                                }
                            },
                        },
                    },
                },
                "published": {"type": "final"},
                "failed": {
                    "invoke": {
                        "src": "fail",
                        "input": lambda event: {
                            "reason": "the Agent's Turn could not go on: " + str(event.get("reason", "no reason given"))
                        },
                    }
                },
            },
            "output": lambda context: {"notes": context.get("notes", "")},
        }
    )
