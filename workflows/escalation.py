"""An approval that escalates: the reviewers have a while to answer, then it goes to the leads, and if nobody has
answered a while after that, it is rejected.

The due times are the Machine's own `after`s, nothing kept beside it: the Console shows each Gate's countdown from
the timer the run has set, the inbox sorts by it, and the graph draws the same two timed transitions.

- `reviewing` invokes the Gate `review`, assigned to the group `reviewers`. Its `after` (the delay `escalate`, read
  from the door) moves the run to `escalated`.
- `escalated` invokes the Gate `escalation`, assigned to the group `leads`. Its `after` (the delay `give_up`) moves
  the run to `rejected`, with the reason that nobody answered in time.
- Either Gate may approve or reject; a rejection takes a reason.
"""

from pydantic import BaseModel, Field

from engine import assign, define_event, jr2_setup


class Door(BaseModel):
    title: str = Field(description="What is to be approved.")
    escalate_after_minutes: float = Field(
        default=60, gt=0, le=60 * 24 * 30, description="How long the reviewers have before it goes to the leads."
    )
    reject_after_minutes: float = Field(
        default=120, gt=0, le=60 * 24 * 30, description="How long the leads then have before it is rejected."
    )


class ApproveInput(BaseModel):
    note: str = Field(default="", description="Anything the requester should know.")


class RejectInput(BaseModel):
    reason: str = Field(min_length=1, description="Why it is rejected.")


approve = define_event(name="approve", input=ApproveInput, description="Approve it.")
reject = define_event(name="reject", input=RejectInput, description="Reject it, with the reason.")


def _meta(context, step):
    return {"title": context["title"], "step": step}


machine = jr2_setup(
    events=[approve, reject],
    delays={
        "escalate": lambda context: context["escalate_ms"],
        "give_up": lambda context: context["reject_ms"],
    },
).create_machine(
    {
        "id": "escalation",
        "input": Door,
        "context": lambda input: {
            "title": input.title,
            "escalate_ms": round(input.escalate_after_minutes * 60_000),
            "reject_ms": round(input.reject_after_minutes * 60_000),
            "decision": None,
            "reason": "",
        },
        "initial": "reviewing",
        "states": {
            "reviewing": {
                "invoke": {
                    "src": "gate",
                    "id": "review",
                    "input": lambda context: {
                        "meta": _meta(context, "The reviewers decide; unanswered, it goes to the leads."),
                        "assign": ["group:reviewers"],
                    },
                },
                "after": {"escalate": "escalated"},
                "on": {"approve": "approved", "reject": "rejected"},
            },
            "escalated": {
                "invoke": {
                    "src": "gate",
                    "id": "escalation",
                    "input": lambda context: {
                        "meta": _meta(context, "The reviewers did not answer in time; the leads decide."),
                        "assign": ["group:leads"],
                    },
                },
                "after": {
                    "give_up": {
                        "target": "rejected",
                        "actions": assign(reason=lambda context: "nobody answered in time"),
                    }
                },
                "on": {"approve": "approved", "reject": "rejected"},
            },
            "approved": {"type": "final", "entry": assign(decision=lambda context: "approved")},
            "rejected": {
                "type": "final",
                "entry": assign(
                    decision=lambda context: "rejected",
                    reason=lambda context, event: context["reason"] or getattr(event, "reason", "") or "",
                ),
            },
        },
        "output": lambda context: {"decision": context["decision"], "reason": context["reason"]},
    }
)
