"""The records a step writes beside its journal entries: one `Op` each (a Turn opened, a message, a model call, an
Effect's progress...), applied inside the step's transaction (engine/runtime/store/step.py)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection, transaction
from django.db.models import F

from engine.models import EffectRecord, ModelCall, Seat, TurnMessage, TurnRecord
from engine.runtime.store import rows

T = TypeVar("T")

__all__ = [
    "Op",
    "read_once",
    "TurnOpened",
    "TurnClosed",
    "TurnChanged",
    "SeatChanged",
    "Message",
    "CallStarted",
    "CallFinished",
    "CallMade",
    "folded",
    "EffectOpened",
    "EffectChanged",
]

# The TurnRecord row id of each open Turn by (run, Turn): every message and model call of a Turn points at that
# row, and looking it up cost a query per message (two per pick). An id is remembered only once the transaction
# that wrote or read it has committed (a rolled-back row's id can be given out again) and forgotten when its Turn
# closes; rows are never deleted while their run is driven, so a remembered id stays right.
_turn_rows: dict[tuple[str, str], int] = {}
_TURN_ROWS_MAX = 10_000  # a bound for Turns that never close here (their host stopped): past it, start afresh


#: Per thread, the ids of Turn rows written by the transaction under way, for its own messages and calls;
#: emptied when it ends (`forget_uncommitted`), committed or not.
_local = threading.local()


def _uncommitted() -> dict[tuple[str, str], int]:
    if not hasattr(_local, "rows"):
        _local.rows = {}
    return _local.rows  # type: ignore[no-any-return]


def _turn_row(run_id: str, turn: str) -> int:
    key = (run_id, turn)
    row = _turn_rows.get(key) or _uncommitted().get(key)
    if row is None:
        row = TurnRecord.objects.only("id").get(run_id=run_id, turn=turn).id
        _remember_turn_row(key, row)
    return row


def forget_uncommitted() -> None:
    """The transaction ended: what it wrote is remembered (on commit) or never was, and what it read is gone."""
    _uncommitted().clear()
    _local.reads = {}


def read_once(key: str, read: Callable[[], T]) -> T:
    """`read()` once per transaction of `store.commit`, `store.write` or `store.commit_group` (a group of steps
    reads the webhook endpoints once, not once per step); outside one, every time."""
    if not connection.in_atomic_block:
        return read()
    reads: dict[str, Any] = getattr(_local, "reads", None) or {}
    _local.reads = reads
    if key not in reads:
        reads[key] = read()
    return reads[key]  # type: ignore[no-any-return]


def _remember_turn_row(key: tuple[str, str], row: int) -> None:
    def remember() -> None:
        if len(_turn_rows) >= _TURN_ROWS_MAX:
            _turn_rows.clear()
        _turn_rows[key] = row

    transaction.on_commit(remember)


class Op:
    """One record a step writes beside its journal entries."""

    def apply(self, run_id: str, now: dt.datetime) -> None:
        raise NotImplementedError(f"{type(self).__name__}.apply")


@dataclass
class TurnOpened(Op):
    turn: str
    agent: str
    state: str
    model: str
    declared_model: str
    scripted: bool
    dials: dict[str, Any]
    conversation: str
    prompt: str
    system: str

    def apply(self, run_id: str, now: dt.datetime) -> None:
        row = rows.insert_one(
            TurnRecord,
            {
                "run_id": run_id,
                "turn": self.turn,
                "agent": self.agent,
                "state": self.state,
                "model": self.model,
                "declared_model": self.declared_model,
                "scripted": self.scripted,
                "dials": self.dials,
                "conversation": self.conversation,
                "prompt": self.prompt,
                "system": self.system,
                "started_at": now,
            },
            now,
        )
        _uncommitted()[(run_id, self.turn)] = row
        _remember_turn_row((run_id, self.turn), row)


@dataclass
class TurnClosed(Op):
    turn: str
    status: TurnRecord.Status = TurnRecord.Status.ENDED
    reason: str = ""

    def apply(self, run_id: str, now: dt.datetime) -> None:
        rows.update(
            TurnRecord,
            {"status": self.status, "reason": self.reason, "ended_at": now, "pending_call": ""},
            {"run_id": run_id, "turn": self.turn, "status": TurnRecord.Status.OPEN},
            later=True,
        )
        transaction.on_commit(lambda: _turn_rows.pop((run_id, self.turn), None))


@dataclass
class TurnChanged(Op):
    """A Turn's waiting tool call, its conversation after a reroll, or who plays it after its seat changed hands."""

    turn: str
    pending_call: str | None = None
    conversation: str | None = None
    model: str | None = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        changes: dict[str, Any] = {}
        if self.model is not None:
            changes["model"] = self.model
        if self.pending_call is not None:
            changes["pending_call"] = self.pending_call
        if self.conversation is not None:
            changes["conversation"] = self.conversation
        if changes:
            rows.update(TurnRecord, changes, {"run_id": run_id, "turn": self.turn}, later=True)


@dataclass
class SeatChanged(Op):
    """A person takes an Agent's seat (`user_id`), or gives it back (None)."""

    agent: str
    user_id: int | None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        Seat.objects.filter(run_id=run_id, agent=self.agent, given_back_at=None).update(given_back_at=now)
        if self.user_id is not None:
            Seat.objects.create(run_id=run_id, agent=self.agent, user_id=self.user_id)


@dataclass
class Message(Op):
    turn: str
    conversation: str
    seq: int
    role: str
    kind: str
    content: list[dict[str, Any]]

    def apply(self, run_id: str, now: dt.datetime) -> None:
        rows.insert(
            TurnMessage,
            [
                {
                    "run_id": run_id,
                    "turn_id": _turn_row(run_id, self.turn),
                    "conversation": self.conversation,
                    "seq": self.seq,
                    "role": self.role,
                    "kind": self.kind,
                    "content": self.content,
                }
            ],
            now,
        )


@dataclass
class CallStarted(Op):
    seq: int
    turn: str
    model: str
    scripted: bool
    request: dict[str, Any]
    messages: int

    def apply(self, run_id: str, now: dt.datetime) -> None:
        rows.insert(ModelCall, [self.row(run_id, now)], now)

    def row(self, run_id: str, now: dt.datetime) -> dict[str, Any]:
        return {
            "run_id": run_id,
            "turn_id": _turn_row(run_id, self.turn),
            "seq": self.seq,
            "model": self.model,
            "scripted": self.scripted,
            "request": self.request,
            "messages": self.messages,
            "started_at": now,
        }


@dataclass
class CallFinished(Op):
    seq: int
    turn: str
    status: ModelCall.Status
    response: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""
    error: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float | None = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        rows.update(ModelCall, self.changes(now), {"run_id": run_id, "seq": self.seq}, later=True)
        self.count_tokens(run_id)

    def changes(self, now: dt.datetime) -> dict[str, Any]:
        return {
            "status": self.status,
            "response": self.response,
            "tool_calls": self.tool_calls,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "latency_ms": self.latency_ms,
            "finished_at": now,
            **self.tokens(),
        }

    def tokens(self) -> dict[str, int]:
        return {
            "input_tokens": self.usage.get("input", 0),
            "output_tokens": self.usage.get("output", 0),
            "cache_read_tokens": self.usage.get("cache_read", 0),
            "cache_write_tokens": self.usage.get("cache_write", 0),
        }

    def count_tokens(self, run_id: str) -> None:
        """The Turn's record adds the call's tokens."""
        tokens = self.tokens()
        if any(tokens.values()):
            TurnRecord.objects.filter(run_id=run_id, turn=self.turn).update(
                **{name: F(name) + value for name, value in tokens.items()}
            )


@dataclass
class CallMade(Op):
    """A model call that started and finished within one commit: its row written once, whole."""

    started: CallStarted
    finished: CallFinished

    def apply(self, run_id: str, now: dt.datetime) -> None:
        rows.insert(ModelCall, [{**self.started.row(run_id, now), **self.finished.changes(now)}], now)
        self.finished.count_tokens(run_id)


def folded(ops: Iterable[Op]) -> list[Op]:
    """The ops as they are written: a call's start and its end in the same commit become one row (`CallMade`),
    where the start was."""
    ops = list(ops)
    ends = {op.seq: op for op in ops if isinstance(op, CallFinished)}
    if not ends:
        return ops
    starts = {op.seq for op in ops if isinstance(op, CallStarted) and op.seq in ends}
    if not starts:
        return ops
    return [
        CallMade(op, ends[op.seq]) if isinstance(op, CallStarted) and op.seq in starts else op
        for op in ops
        if not (isinstance(op, CallFinished) and op.seq in starts)
    ]


@dataclass
class EffectOpened(Op):
    effect: str
    slot: str
    kind: str
    state: str
    spec: dict[str, Any]
    input: Any
    idempotent: bool

    def apply(self, run_id: str, now: dt.datetime) -> None:
        EffectRecord.objects.create(
            run_id=run_id,
            effect=self.effect,
            slot=self.slot,
            kind=self.kind,
            state=self.state,
            spec=self.spec,
            input=self.input,
            idempotent=self.idempotent,
            requested_at=now,
        )


@dataclass
class EffectChanged(Op):
    effect: str
    status: EffectRecord.Status
    result: Any = None
    duration_ms: float | None = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        changes: dict[str, Any] = {"status": self.status}
        if self.status == EffectRecord.Status.STARTED:
            changes.update(started_at=now, attempts=F("attempts") + 1)
        else:
            changes.update(finished_at=now, result=self.result, duration_ms=self.duration_ms)
        EffectRecord.objects.filter(run_id=run_id, effect=self.effect).update(**changes)
