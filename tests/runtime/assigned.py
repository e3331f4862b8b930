"""A Machine whose one Gate is assigned to the user ann and the group leads, for the tests of assignment."""

from __future__ import annotations

from pydantic import BaseModel, Field

from engine import define_event, jr2_setup


class Door(BaseModel):
    title: str


class Decision(BaseModel):
    note: str = Field(description="Why, in a sentence.")


approve = define_event(name="approve", input=Decision, description="Approve it.")
reject = define_event(name="reject", input=Decision, description="Reject it.")

approval = jr2_setup(events=[approve, reject]).create_machine(
    {
        "id": "approval",
        "input": Door,
        "context": lambda input: {"title": input.title, "decision": None},
        "initial": "reviewing",
        "states": {
            "reviewing": {
                "invoke": {
                    "src": "gate",
                    "id": "review",
                    "input": {"meta": {"title": "Ship it?"}, "assign": ["user:ann", "group:leads"]},
                },
                "on": {"approve": "approved", "reject": "rejected"},
            },
            "approved": {"type": "final"},
            "rejected": {"type": "final"},
        },
        "output": lambda context: {"title": context["title"]},
    }
)
