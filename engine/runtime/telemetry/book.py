"""A run's spans, kept from what each commit wrote: the journal entries of the step, the records it wrote (Turns,
model calls, Effects) and the view it left. Every span's id is derived from the run and the journal
(`telemetry/ids.py`), and a span is handed out only once it has ended, after its commit: journal first, then tell.

    book = RunSpans("r-1", "notes", root="notes", capture=False)
    ended = book.committed(first_seq, entries, ops, view, status, now_ns)   # SpanData of the spans that ended

Spans, as OpenTelemetry's GenAI conventions name them where they apply:
- `invoke_workflow {workflow}`: the run;
- `jr2.state {path}`: a visit to a state, nested as the states nest;
- `invoke_agent {agent}`: a Turn, under its Agent's state;
- `chat {model}`: a model request, under its Turn;
- `execute_tool {event}`: a pick, under its Turn;
- `jr2.effect {slot}`: an Effect, under its state;
- `jr2.gate {gate id}`: a Gate from opened to answered, under its state, with who answered and through which door;
- timers, faults and cancels are events of the run's span.

Content (the run's input and output, picks' and answers' payloads, a Gate's `meta`) is recorded only with
`capture`, as the conventions ask; names, ids, states, outcomes and counts always are. No OpenTelemetry import
here: this is bookkeeping, so it runs (and is tested) without an exporter.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.core.journal.entries import Advance, Cancel, Entry, Fault, Fork, GateAnswer, Pick, Start
from engine.runtime.store import ops as store_ops
from engine.runtime.telemetry.ids import span_id

__all__ = ["SpanData", "RunSpans", "PICK_OUTCOMES", "ENDED"]

#: A pick's outcome as the spans name it (engine/core/outputs.py's PickOutcome, in the issue's words).
PICK_OUTCOMES = {
    "answered": "delivered",
    "ended": "delivered",
    "outstanding": "outstanding",
    "unmoved": "not allowed",
    "refused": "refused",
}

#: The run statuses after which nothing more happens in a run.
ENDED = frozenset({"done", "failed", "cancelled", "drifted"})

#: Effect statuses that end its span.
_EFFECT_ENDS = frozenset({"done", "failed", "cancelled", "interrupted"})


@dataclass
class SpanData:
    """One span, as the book keeps it: `key` names it in the run (its id is derived from it), `parent` is the
    key of the span it nests in (None for the run's own)."""

    key: str
    name: str
    parent: str | None
    start_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    end_ns: int | None = None
    error: str | None = None

    def end(self, at_ns: int, error: str | None = None) -> SpanData:
        self.end_ns = max(at_ns, self.start_ns)
        if error:
            self.error = error
        return self


class RunSpans:
    """The open spans of one run, and the rules that open and end them from what a commit wrote."""

    def __init__(self, run_id: str, workflow: str, *, root: str, capture: bool) -> None:
        self.run_id = run_id
        self.workflow = workflow
        self.root = root
        self.capture = capture
        self.open: dict[str, SpanData] = {}
        self.states: dict[str, str] = {}
        self.gates: dict[str, str] = {}
        self.turns: dict[str, str] = {}
        self.conversations: dict[str, str] = {}
        self.calls: dict[int, str] = {}
        self.effects: dict[str, str] = {}
        self._answers: dict[str, GateAnswer] = {}

    def span_id(self, key: str) -> int:
        return span_id(self.run_id, key)

    # -- a commit ------------------------------------------------------------------------------------------------

    def committed(
        self,
        first_seq: int,
        entries: Sequence[Entry],
        ops: Sequence[Any],
        view: Mapping[str, Any],
        status: str,
        now_ns: int,
    ) -> list[SpanData]:
        """The spans that ended with this commit (entries numbered from `first_seq`), after opening the ones it
        began."""
        ended: list[SpanData] = []
        at_ns = _ns(max((_at(e) for e in entries), default=0.0)) or now_ns
        for seq, entry in enumerate(entries, start=first_seq):
            ended.extend(self._entry(seq, entry))
        self._open_view(first_seq, view, at_ns)
        for op in ops:
            ended.extend(self._op(op, now_ns))
        ended.extend(self._close_view(view, at_ns))
        if status in ENDED:
            ended.extend(self._run_ended(status, view, at_ns))
        return ended

    def resumed(self, seq: int, entry: Entry, view: Mapping[str, Any]) -> None:
        """Rebuild the open spans from one recorded step (a host taking the run up again walks its journal): the
        ids and start times come out as the first host had them, and nothing is handed out."""
        self._entry(seq, entry)
        self._view(seq, view, _ns(_at(entry)))

    def resumed_turn(self, turn: str, agent: str, state: str, model: str, conversation: str, start_ns: int) -> None:
        """An open Turn of a run taken up again, from its record."""
        self._open_turn(turn, agent, state, model, conversation, start_ns)

    # -- journal entries -----------------------------------------------------------------------------------------

    def _entry(self, seq: int, entry: Entry) -> list[SpanData]:
        at_ns = _ns(_at(entry))
        if isinstance(entry, Start | Fork):
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_workflow",
                "jr2.workflow": self.workflow,
                "jr2.run.id": self.run_id,
            }
            if isinstance(entry, Start) and self.capture:
                attributes["jr2.run.input"] = _json(entry.input)
            self.open["run"] = SpanData("run", f"invoke_workflow {self.workflow}", None, at_ns, attributes)
            return []
        run = self._run()
        if isinstance(entry, Pick):
            return [self._pick(seq, entry, at_ns)]
        if isinstance(entry, GateAnswer):
            self._answers[entry.gate] = entry
        elif isinstance(entry, Advance):
            run.events.append(("jr2.timer", at_ns, {"jr2.timer.ms": float(entry.ms)}))
        elif isinstance(entry, Fault):
            run.events.append(
                ("jr2.agent.fault", at_ns, {"gen_ai.agent.name": entry.agent, "jr2.reason": entry.reason})
            )
        elif isinstance(entry, Cancel):
            run.events.append(("jr2.run.cancel", at_ns, {"jr2.by": entry.by or ""}))
            if entry.by:
                run.attributes["jr2.run.cancelled_by"] = entry.by
        return []

    def _pick(self, seq: int, entry: Pick, at_ns: int) -> SpanData:
        outcome = PICK_OUTCOMES.get(str(entry.outcome or ""), str(entry.outcome or ""))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": entry.event,
            "gen_ai.agent.name": entry.agent,
            "jr2.pick.outcome": outcome,
            "jr2.pick.seq": seq,
        }
        if entry.call:
            attributes["gen_ai.tool.call.id"] = entry.call
        if entry.player:
            attributes["jr2.pick.player"] = entry.player
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = _json(entry.params)
        parent = self.turns.get(entry.turn or "") or self._agent_turn(entry.agent) or "run"
        span = SpanData(f"pick {seq}", f"execute_tool {entry.event}", parent, at_ns, attributes)
        error = None
        if outcome == "refused":
            error = f"the pick {entry.event} was refused"
        elif outcome == "not allowed":
            error = f"{entry.event} is not in the Allowed picks now"
        if error:
            attributes["jr2.pick.reason"] = error
        return span.end(at_ns, error)

    def _agent_turn(self, agent: str) -> str | None:
        for key, span in self.open.items():
            if key.startswith("turn ") and span.attributes.get("gen_ai.agent.name") == agent:
                return key
        return None

    # -- records -------------------------------------------------------------------------------------------------

    def _op(self, op: Any, now_ns: int) -> list[SpanData]:
        if isinstance(op, store_ops.TurnOpened):
            self._open_turn(op.turn, op.agent, op.state, op.declared_model or op.model, op.conversation, now_ns)
        elif isinstance(op, store_ops.TurnClosed):
            key = self.turns.pop(op.turn, None)
            span = self.open.pop(key, None) if key else None
            if span is not None:
                span.attributes["jr2.turn.status"] = str(op.status)
                return [span.end(now_ns, op.reason or None if str(op.status) == "faulted" else None)]
        elif isinstance(op, store_ops.TurnChanged) and op.conversation:
            self.conversations[op.turn] = op.conversation
        elif isinstance(op, store_ops.CallStarted):
            self._open_call(op, now_ns)
        elif isinstance(op, store_ops.CallFinished):
            return self._end_call(op, now_ns)
        elif isinstance(op, store_ops.EffectOpened):
            key = f"effect {op.effect}"
            self.effects[op.effect] = key
            attributes = {"jr2.effect.id": op.effect, "jr2.effect.slot": op.slot, "jr2.effect.kind": op.kind}
            self.open[key] = SpanData(key, f"jr2.effect {op.slot}", self._state_key(op.state), now_ns, attributes)
        elif isinstance(op, store_ops.EffectChanged) and str(op.status) in _EFFECT_ENDS:
            key = self.effects.pop(op.effect, "")
            span = self.open.pop(key, None)
            if span is not None:
                span.attributes["jr2.effect.status"] = str(op.status)
                if op.duration_ms is not None:
                    span.attributes["jr2.effect.duration_ms"] = float(op.duration_ms)
                    span.start_ns = min(span.start_ns, now_ns - int(op.duration_ms * 1e6))
                error = (
                    None if str(op.status) == "done" else f"the Effect {span.attributes['jr2.effect.slot']} {op.status}"
                )
                return [span.end(now_ns, error)]
        return []

    def _open_turn(self, turn: str, agent: str, state: str, model: str, conversation: str, at_ns: int) -> None:
        key = f"turn {turn}"
        self.turns[turn] = key
        self.conversations[turn] = conversation
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.request.model": _model_id(model),
            "gen_ai.conversation.id": conversation,
            "jr2.turn.id": turn,
            "jr2.workflow": self.workflow,
        }
        self.open[key] = SpanData(key, f"invoke_agent {agent}", self._state_key(state), at_ns, attributes)

    def _open_call(self, op: store_ops.CallStarted, now_ns: int) -> None:
        key = f"call {op.seq}"
        self.calls[op.seq] = key
        parent = self.turns.get(op.turn, "run")
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider(op.model),
            "gen_ai.request.model": _model_id(op.model),
            "gen_ai.conversation.id": self.conversations.get(op.turn, ""),
            "jr2.turn.id": op.turn,
            "jr2.workflow": self.workflow,
        }
        self.open[key] = SpanData(key, f"chat {_model_id(op.model)}", parent, now_ns, attributes)

    def _end_call(self, op: store_ops.CallFinished, now_ns: int) -> list[SpanData]:
        key = self.calls.pop(op.seq, None)
        span = self.open.pop(key, None) if key else None
        if span is None:
            return []
        usage = op.usage or {}
        span.attributes.update(
            {
                "gen_ai.usage.input_tokens": int(usage.get("input_tokens", 0)),
                "gen_ai.usage.output_tokens": int(usage.get("output_tokens", 0)),
                "gen_ai.usage.cache_read.input_tokens": int(usage.get("cache_read_tokens", 0)),
                "gen_ai.usage.cache_creation.input_tokens": int(usage.get("cache_write_tokens", 0)),
            }
        )
        if op.stop_reason:
            span.attributes["gen_ai.response.finish_reasons"] = [op.stop_reason]
        if op.latency_ms is not None:
            span.start_ns = min(span.start_ns, now_ns - int(op.latency_ms * 1e6))
        return [span.end(now_ns, op.error or None)]

    # -- the view: states and Gates -----------------------------------------------------------------------------

    def _view(self, seq: int, view: Mapping[str, Any], at_ns: int) -> list[SpanData]:
        self._open_view(seq, view, at_ns)
        return self._close_view(view, at_ns)

    def _open_view(self, seq: int, view: Mapping[str, Any], at_ns: int) -> None:
        """Open the spans of states entered and Gates opened (before the step's records, which nest in them)."""
        for path in sorted((str(p) for p in view.get("active") or () if str(p) not in self.states), key=_depth):
            key = f"state {path} @{seq}"
            self.states[path] = key
            parent = self.states.get(path.rsplit(".", 1)[0], "run") if "." in path else "run"
            attributes = {"jr2.state.path": path, "jr2.workflow": self.workflow}
            self.open[key] = SpanData(key, f"jr2.state {path}", parent, at_ns, attributes)
        for gate in view.get("gates") or ():
            gate_id = str(gate.get("id"))
            if gate_id not in self.gates:
                self._open_gate(seq, gate_id, gate, at_ns)

    def _close_view(self, view: Mapping[str, Any], at_ns: int) -> list[SpanData]:
        """End the spans of Gates closed and states left (after the step's records, innermost first)."""
        ended: list[SpanData] = []
        active = {str(p) for p in view.get("active") or ()}
        gates = {str(g.get("id")) for g in view.get("gates") or ()}
        for gate in [g for g in self.gates if g not in gates]:
            ended.append(self._end_gate(gate, at_ns))
        for path in sorted((p for p in self.states if p not in active), key=_depth, reverse=True):
            ended.extend(self._end_state(path, at_ns))
        return ended

    def _end_state(self, path: str, at_ns: int) -> list[SpanData]:
        key = self.states.pop(path)
        span = self.open.pop(key, None)
        return [span.end(at_ns)] if span is not None else []

    def _open_gate(self, seq: int, gate_id: str, gate: Mapping[str, Any], at_ns: int) -> None:
        key = f"gate {gate_id} @{seq}"
        self.gates[gate_id] = key
        attributes: dict[str, Any] = {
            "jr2.gate.id": gate_id,
            "jr2.gate.accepts": [str(a) for a in gate.get("accepts") or ()],
            "jr2.workflow": self.workflow,
        }
        if self.capture:
            attributes["jr2.gate.meta"] = _json(gate.get("meta"))
        parent = self._state_key(str(gate.get("path") or gate.get("state") or ""))
        self.open[key] = SpanData(key, f"jr2.gate {gate_id}", parent, at_ns, attributes)

    def _end_gate(self, gate_id: str, at_ns: int) -> SpanData:
        key = self.gates.pop(gate_id)
        span = self.open.pop(key)
        answer = self._answers.pop(gate_id, None)
        if answer is not None:
            span.attributes["jr2.gate.event"] = answer.event
            span.attributes["jr2.gate.answered_by"] = answer.by or ""
            door = getattr(answer, "door", None)
            if door:
                span.attributes["jr2.gate.door"] = str(door)
            if self.capture:
                span.attributes["jr2.gate.answer"] = _json(answer.params)
        else:
            span.attributes["jr2.gate.closed"] = "the state was left without an answer"
        return span.end(at_ns)

    # -- the end -----------------------------------------------------------------------------------------------

    def _run_ended(self, status: str, view: Mapping[str, Any], at_ns: int) -> list[SpanData]:
        ended: list[SpanData] = []
        for key in reversed(list(self.open)):
            if key != "run":
                ended.append(self.open.pop(key).end(at_ns))
        self.states.clear()
        self.gates.clear()
        self.turns.clear()
        self.calls.clear()
        self.effects.clear()
        run = self._run()
        del self.open["run"]
        run.attributes["jr2.run.status"] = status
        if self.capture and view.get("output") is not None:
            run.attributes["jr2.run.output"] = _json(view.get("output"))
        ended.append(run.end(at_ns, f"the run {status}" if status in {"failed", "drifted"} else None))
        return ended

    # -- helpers -------------------------------------------------------------------------------------------------

    def _run(self) -> SpanData:
        """The run's span; a book that missed the run's start (a host that never saw its first step) opens it now
        with the ids the first host gave it."""
        run = self.open.get("run")
        if run is None:
            run = SpanData("run", f"invoke_workflow {self.workflow}", None, 0, {"jr2.workflow": self.workflow})
            self.open["run"] = run
        return run

    def _state_key(self, path: str) -> str:
        """The open span of the state at `path` (written with or without the Machine's id first), else the run."""
        bare = path.split(".", 1)[1] if path.startswith(f"{self.root}.") else path
        return self.states.get(bare, self.states.get(path, "run"))

    def keys(self) -> Iterable[str]:
        return self.open.keys()


def _depth(path: str) -> int:
    return path.count(".")


def _ns(ms: float) -> int:
    return int(ms * 1_000_000)


def _provider(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "unknown"


def _model_id(model: str) -> str:
    return model.split("/", 1)[1] if "/" in model else model


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def _at(entry: Entry) -> float:
    """When an entry came, in the Session's milliseconds (every kind records `at`)."""
    return float(getattr(entry, "at", 0.0) or 0.0)
