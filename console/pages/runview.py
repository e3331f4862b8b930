"""A run as its page shows it, read from what the runtime committed: the Run row's `view`, its Turn records and
messages, its model calls. Nothing here decides anything; the engine and the runtime did.

`run_page(run_id, user)` is used by the page view and by the live consumer, so a page and its live fragments always
agree.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import Any

from console.access import can
from console.pages.assigned import Answerer, GateWho, gate_who
from console.pages.chain import chain_of
from console.pages.conversation import TurnView, conversation_lines
from console.pages.feeds import Feeds, head
from console.pages.forms import SchemaForm, schema_form
from engine.core.journal.entries import Entry
from engine.core.words import door_words
from engine.core.workflow import Machine
from engine.models import GateRecord, JournalEntry, ModelCall, Run, TurnMessage, TurnRecord
from engine.runtime.players import player_for
from engine.runtime.registry import workflows
from engine.runtime.store.inputs import InputReport, reports
from engine.runtime.view import RunView, TurnNow
from engine.runtime.workspace.sandbox import WorkspaceError
from engine.runtime.workspace.tools import workspace_for

__all__ = [
    "RunPage",
    "GateView",
    "AgentTurns",
    "SeatView",
    "run_page",
    "machine_of",
    "agent_turns",
    "gate_key",
    "seat_key",
]


@dataclass
class AgentTurns:
    agent: str
    turns: list[TurnView]


@dataclass
class GateView:
    id: str
    state: str
    meta: dict[str, Any]
    forms: list[tuple[str, str, SchemaForm]]
    #: (path, text) of the workspace files the Gate shows (`gate(workspace=..., files=...)`), and a note when there
    #: are none to show.
    files: list[tuple[str, str]] = field(default_factory=list)
    files_note: str = ""
    #: When the Machine's `after` on the Gate's state fires (ms since the epoch), or None.
    due: float | None = None
    #: Who may answer it and the claim buttons (console/pages/assigned.py).
    who: GateWho | None = None
    #: The Chain that led to it: the pick that opened it and the reply before that, in words.
    chain: list[str] = field(default_factory=list)
    #: Answers to this Gate that are kept but not delivered yet (no worker holds the run): shown on the Gate.
    waiting: list[InputReport] = field(default_factory=list)


@dataclass
class SeatView:
    """An Agent's seat: who plays it, whether this user may take it, and, when this user holds it and its Turn is
    open, the Menu as forms (the Allowed picks enabled, the others greyed with the reason)."""

    agent: str
    #: Who plays the seat when no person holds it, as the run's Turns will say it (a scripted stand-in, a model
    #: set by JR2_MODEL_OVERRIDE beside the declared one).
    model: str
    holder: str | None
    mine: bool
    can_take: bool
    turn: TurnNow | None
    picks: list[tuple[str, str, SchemaForm, bool, str]]

    @property
    def over_mcp(self) -> bool:
        """An MCP session holds the seat (`mcp/<username> via <client>`, engine/web/mcp/seat.py)."""
        return self.holder is not None and self.holder.startswith("mcp/")


@dataclass
class RunPage:
    run: Run
    machine: Machine | None
    active: list[str]
    visited: list[str]
    gates: list[GateView]
    feeds: Feeds
    seats: list[str]
    turns_now: list[TurnNow]
    can_answer: bool
    can_cancel: bool
    context_json: str
    output_json: str
    seat_views: list[SeatView] = field(default_factory=list)
    held: tuple[str, ...] = ()
    #: Who cancelled the run, by which door and why, in words ("" unless it was cancelled).
    cancelled: str = ""
    #: Each answered Gate: which event, who answered it and through which door.
    answered: list[str] = field(default_factory=list)
    #: The newest inputs people sent the run, newest first, each pending, delivered or refused with the reason.
    inputs: list[InputReport] = field(default_factory=list)

    @property
    def inputs_key(self) -> tuple[tuple[int, str], ...]:
        """What the inputs shown are now: a page is drawn again when one is sent or settled."""
        return tuple((found.input, found.status) for found in self.inputs)


#: How many of the newest inputs sent to a run its page lists.
INPUTS_SHOWN = 10


def machine_of(workflow: str) -> Machine | None:
    loaded = workflows().find(workflow)
    return loaded.machine if loaded is not None else None


def run_page(run_id: str | Run, user: Any, bound: dict[str, SchemaForm] | None = None) -> RunPage | None:
    """Everything the run page shows; `bound` holds Gate forms filled by the user (with their errors). Of the
    history, only the summary and the newest page of steps and Turns (console/pages/feeds.py): older pages load
    apart. Given the Run row itself (a live page's hub read it once for every viewer), it is not read again."""
    run = run_id if isinstance(run_id, Run) else Run.objects.filter(id=run_id).first()
    if run is None:
        return None
    view = RunView.of(run.view)
    machine = machine_of(run.workflow)
    answering = can(user, "answer") and run.live
    answerer = Answerer.of(user)
    chain = chain_of(run.id) if view.gates else []
    inputs = reports(run.id, INPUTS_SHOWN)
    gates = []
    for gate in view.gates:
        held = view.claim(gate.id, time.time())
        who = gate_who(
            answerer,
            gate.assign,
            held.by if held else "",
            dt.datetime.fromtimestamp(held.until, tz=dt.UTC) if held else None,
        )
        forms = []
        for name in gate.accepts:
            event = machine.gate_event(gate.id, name) if machine is not None else None
            key = gate_key(gate.id, name)
            form = (bound or {}).get(key) or schema_form(
                event.input if event else None, auto_id=f"id_gate_{gate.id}_{name}_%s"
            )
            forms.append((name, (event.description or "") if event else "", form))
        shown, note = _gate_files(run, machine, gate.id)
        gates.append(
            GateView(
                gate.id,
                gate.path or gate.state,
                dict(gate.meta),
                forms if answering and who.may_answer else [],
                shown,
                note,
                gate.due,
                who if run.live else None,
                chain,
                [found for found in inputs if found.pending and found.kind == "gate" and found.gate == gate.id],
            )
        )
    active = list(view.active)
    seat_paths = {f"{machine.id}.{p}" for p in active} if machine is not None else set()
    seats = [seat.line() for seat in machine.seats() if seat.path in seat_paths] if machine is not None else []
    seat_views = _seats(run, machine, user, view, bound or {})
    return RunPage(
        run=run,
        machine=machine,
        active=active,
        visited=list(view.visited),
        gates=gates,
        feeds=head(run.id, run.seq),
        seats=seats,
        turns_now=list(view.turns),
        can_answer=answering,
        can_cancel=can(user, "cancel") and run.live,
        context_json=_pretty(view.context),
        output_json=_pretty(run.output),
        seat_views=seat_views,
        held=tuple(s.agent for s in seat_views if s.mine),
        cancelled=_cancelled(run),
        answered=_answered(run),
        inputs=inputs,
    )


def _cancelled(run: Run) -> str:
    if run.status != Run.Status.CANCELLED:
        return ""
    entry = JournalEntry.objects.filter(run=run, kind="cancel").order_by("-seq").values_list("entry", flat=True).first()
    return Entry.from_json(entry).describe() if entry else ""


def _answered(run: Run) -> list[str]:
    rows = GateRecord.objects.filter(run=run).exclude(event="").order_by("closed_at", "id")
    return [
        f"{r.gate} got {r.event}"
        + (f" from {r.answered_by}" if r.answered_by else "")
        + (f" {door_words(r.answered_door)}" if r.answered_door else "")
        for r in rows
    ]


def _gate_files(run: Run, machine: Machine | None, gate: str) -> tuple[list[tuple[str, str]], str]:
    """The files a Gate made with `gate(workspace=..., files=...)` shows, read from the run's workspace now."""
    slot = machine.gate_slot(gate) if machine is not None else None
    if machine is None or slot is None or slot.workspace is None:
        return [], ""
    prefix = gate.rsplit("/", 1)[0] + "/" if "/" in gate else ""
    agent = prefix + slot.workspace
    try:
        workspace = workspace_for(run.id, agent, machine.agent_slot(agent))
        shown = workspace.matching(slot.files) if workspace is not None else []
    except WorkspaceError as err:
        return [], f"The workspace of {agent} cannot be read: {err}"
    return shown, "" if shown else f"No file of the workspace of {agent} matches {', '.join(slot.files)} yet."


def _seats(run: Run, machine: Machine | None, user: Any, view: RunView, bound: dict[str, SchemaForm]) -> list[SeatView]:
    if machine is None or not run.live:
        return []
    holders = view.seats
    me = user.get_username() if getattr(user, "is_authenticated", False) else None
    playing = can(user, "play")
    out = []
    for agent, slot in machine.agents.items():
        holder = holders.get(agent)
        turn = view.turn_of(agent)
        mine = holder is not None and holder == me
        picks = []
        if mine and turn is not None:
            allowed = set(turn.allowed)
            for tool in machine.menu(agent):
                name = tool["name"]
                event = machine.events[name]
                why = (
                    ""
                    if name in allowed
                    else (
                        f'waiting on the pick "{turn.outstanding.event}"'
                        if turn.outstanding
                        else f"not allowed now in {turn.state}"
                    )
                )
                form = bound.get(seat_key(agent, name)) or schema_form(
                    event.input, auto_id=f"id_seat_{agent}_{name}_%s"
                )
                picks.append((name, tool.get("description", ""), form, name in allowed, why))
        played_by = player_for(run.workflow, agent, slot.model).label
        out.append(SeatView(agent, played_by, holder, mine, playing and holder is None, turn, picks))
    return out


def agent_turns(run: Run) -> list[AgentTurns]:
    """The run's Turns, grouped by Agent, each with its conversation lines and the model calls that made them."""
    records = list(TurnRecord.objects.filter(run=run).order_by("started_at", "id"))
    messages: dict[int, list[TurnMessage]] = {}
    for message in TurnMessage.objects.filter(run=run).order_by("conversation", "seq"):
        messages.setdefault(message.turn_id, []).append(message)
    calls: dict[int, list[ModelCall]] = {}
    for call in ModelCall.objects.filter(run=run).order_by("seq"):
        calls.setdefault(call.turn_id, []).append(call)
    by_agent: dict[str, AgentTurns] = {}
    for record in records:
        own_calls = [c for c in calls.get(record.pk, []) if c.status == ModelCall.Status.DONE]
        lines = conversation_lines(messages.get(record.pk, []), own_calls)
        latency = sum(c.latency_ms or 0 for c in calls.get(record.pk, []))
        by_agent.setdefault(record.agent, AgentTurns(record.agent, [])).turns.append(
            TurnView(record, lines, len(calls.get(record.pk, [])), round(latency, 1))
        )
    return list(by_agent.values())


def _pretty(value: Any) -> str:
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def gate_key(gate: str, event: str) -> str:
    return f"gate:{gate}:{event}"


def seat_key(agent: str, event: str) -> str:
    return f"seat:{agent}:{event}"
