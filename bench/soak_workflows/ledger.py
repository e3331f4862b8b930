"""The kill soak's ledger: a clerk Agent proposes an amount, a person approves it at a Gate, and a command Effect
appends one line to a ledger file. Appending is not idempotent, so the Effect is declared so: when its worker is
killed mid-way, the run is not posted twice by the engine but told "interrupted by a restart". The Machine then
reconciles: an idempotent Effect reads the ledger, and the run either counts its line as posted or posts again.
That is the pattern for any non-idempotent work under faults: at most once from the engine, exactly once by design.
"""

import os
import sys

from pydantic import BaseModel, Field

from engine import agent, assign, define_event, effect, fail, jr2_setup, scripted

#: The file the Effect appends to (the soak gives each run of it its own folder).
LEDGER = os.environ.get("JR2_SOAK_LEDGER", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ledger.txt"))

POST = (
    "import sys, time\n"
    "time.sleep(0.2)\n"  # long enough for a kill to land while the line is being posted
    "with open(sys.argv[1], 'a') as ledger:\n"
    "    ledger.write(sys.argv[2] + ' ' + sys.argv[3] + '\\n')\n"
)
CHECK = (
    "import json, os, sys\n"
    "lines = open(sys.argv[1]).read().splitlines() if os.path.exists(sys.argv[1]) else []\n"
    "print(json.dumps({'posted': any(line.split(' ')[0] == sys.argv[2] for line in lines)}))\n"
)


class Door(BaseModel):
    ticket: str = Field(description="The ticket to post, unique per run.", pattern=r"^[A-Za-z0-9-]{1,40}$")
    amount: int = Field(ge=0, le=1_000_000, description="The amount asked for.")


class ProposeInput(BaseModel):
    amount: int = Field(ge=0, description="The amount to post.")


class ApproveInput(BaseModel):
    by: str = Field(description="Who approves.")


propose = define_event(name="propose", input=ProposeInput, description="Propose the amount to post. Then stop.")
approve = define_event(name="approve", input=ApproveInput, description="Approve posting the proposed amount.")


def _posted(event) -> bool:
    return '"posted": true' in str(event.output.get("stdout", ""))


machine = jr2_setup(
    events=[propose, approve],
    actors={
        "clerk": agent(model="script/ledger.clerk", instructions="Propose the amount asked for."),
        "post": effect.command([sys.executable, "-c", POST]),
        "check": effect.command([sys.executable, "-c", CHECK], idempotent=True),
        "fail": fail(),
    },
).create_machine(
    {
        "id": "ledger",
        "input": Door,
        "context": lambda input: {
            "ticket": input.ticket,
            "amount": input.amount,
            "proposed": 0,
            "approved_by": "",
            "interrupted": 0,
        },
        "on": {"agent.fault": ".failed"},
        "initial": "drafting",
        "states": {
            "drafting": {
                "invoke": {
                    "src": "clerk",
                    "input": lambda context: {"prompt": f"Ticket {context['ticket']} asks for {context['amount']}."},
                },
                "on": {"propose": {"target": "approval", "actions": assign(proposed=lambda event: event.amount)}},
            },
            "approval": {
                "invoke": {
                    "src": "gate",
                    "input": lambda context: {"meta": {"ticket": context["ticket"], "amount": context["proposed"]}},
                },
                "on": {"approve": {"target": "posting", "actions": assign(approved_by=lambda event: event.by)}},
            },
            "posting": {
                "invoke": {
                    "src": "post",
                    "input": lambda context: {"args": [LEDGER, context["ticket"], str(context["proposed"])]},
                    "onDone": "posted",
                    "onError": {
                        "target": "checking",
                        "actions": assign(interrupted=lambda context: context["interrupted"] + 1),
                    },
                },
            },
            "checking": {
                "invoke": {
                    "src": "check",
                    "input": lambda context: {"args": [LEDGER, context["ticket"]]},
                    "onDone": [{"guard": lambda event: _posted(event), "target": "posted"}, {"target": "posting"}],
                    "onError": "failed",
                },
            },
            "posted": {"type": "final"},
            "failed": {
                "invoke": {
                    "src": "fail",
                    "input": lambda event: {
                        "reason": "the ledger could not be posted: " + str(event.get("reason") or event.get("error"))
                    },
                }
            },
        },
        "output": lambda context: {
            "ticket": context["ticket"],
            "posted": context["proposed"],
            "approved_by": context["approved_by"],
        },
    }
)


@scripted("ledger.clerk")
def clerk(turn):
    """Proposes the amount the ticket asks for."""
    if "propose" not in turn.allowed_picks:
        return None
    return ("propose", {"amount": int(turn.prompt.rsplit(" ", 1)[1].rstrip("."))})
