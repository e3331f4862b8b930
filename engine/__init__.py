"""The jr2 engine: the authoring surface workflows import, over the statechart interpreter (`engine.core.statechart`).

Workflows import everything from here: `define_event`, `jr2_setup`, `agent`, `fail`, `effect`, `from_pick`,
`assign`, `answer`, `sent_by`, `raise_`, `send_to`; the `gate` actor is always registered (`gate(workspace=...,
files=...)` makes one whose form shows files from an Agent's workspace). `Session` is the
deterministic core of one run.
"""

from importlib.metadata import PackageNotFoundError, version

from engine.core.errors import EventDefError, MachineError
from engine.core.events import EventDef, define_event
from engine.core.outputs import Delivery, EffectRequested, PickResult
from engine.core.routes import answer, sent_by
from engine.core.scripts import scripted
from engine.core.session import Gate, PendingEffect, Session, SessionError, Turn
from engine.core.slots import agent, effect, fail, from_pick, gate
from engine.core.statechart import (
    and_,
    assign,
    cancel,
    emit,
    enqueue_actions,
    forward_to,
    log,
    not_,
    or_,
    raise_,
    send_parent,
    send_to,
    state_in,
)
from engine.core.statechart.clock import SimulatedClock
from engine.core.workflow import Machine, Setup, jr2_setup

try:
    __version__ = version("jr2")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "Delivery",
    "EffectRequested",
    "EventDef",
    "EventDefError",
    "Gate",
    "Machine",
    "MachineError",
    "PendingEffect",
    "PickResult",
    "Session",
    "SessionError",
    "Setup",
    "SimulatedClock",
    "Turn",
    "__version__",
    "agent",
    "and_",
    "answer",
    "assign",
    "cancel",
    "define_event",
    "effect",
    "emit",
    "enqueue_actions",
    "fail",
    "forward_to",
    "from_pick",
    "gate",
    "jr2_setup",
    "log",
    "not_",
    "or_",
    "raise_",
    "scripted",
    "send_parent",
    "send_to",
    "sent_by",
    "state_in",
]
