"""What an MCP seat reads, from what the run recorded: the request that waits for the client's pick (the Agent's
in-flight model call whose model is `mcp/<username> via <client>`), the text a model would read with it, and what
became of a pick.

Reading the records, not the memory of the process that drives the run, lets a `jr2 web` process serve a seat of a
run that a worker drives (the fleet): the picks reach the worker through the relay, and the worker's records reach
every process through the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.models import JournalEntry, ModelCall, Run, TurnMessage, TurnRecord
from engine.runtime.providers.mcp_seat import PREFIX, WAITING, tail_text
from engine.runtime.view import RunView

__all__ = ["Reading", "read", "ENDED"]

ENDED = ("done", "failed", "cancelled")


@dataclass(frozen=True)
class Reading:
    """A seat as recorded now. `call` is the number of the model call waiting for the client (0 when none),
    `text` what the model reads with it, `error` whether a tool result in that text is an error, and `outcome` what
    became of the pick that the text answers (refused, unmoved, answered...; "" when it answers none)."""

    status: str
    output: Any
    view: RunView
    turn: str = ""
    turn_open: bool = False
    call: int = 0
    text: str = ""
    error: bool = False
    outcome: str = ""

    @property
    def ended(self) -> bool:
        return self.status in ENDED


def read(run_id: str, agent: str) -> Reading:
    row = Run.objects.filter(id=run_id).only("status", "output", "view").first()
    if row is None:
        return Reading("gone", None, RunView.of(None))
    view = RunView.of(row.view)
    base = {"status": str(row.status), "output": row.output, "view": view}
    record = TurnRecord.objects.filter(run_id=run_id, agent=agent).order_by("-started_at", "-id").first()
    if record is None:
        return Reading(**base)
    turn_open = record.status == TurnRecord.Status.OPEN
    call = (
        ModelCall.objects.filter(turn=record, status=ModelCall.Status.IN_FLIGHT, model__startswith=f"{PREFIX}/")
        .exclude(model=f"{PREFIX}/{WAITING}")  # a seat no client holds yet: the client reads the call made for it
        .order_by("-seq")
        .first()
    )
    if call is None or not turn_open:
        return Reading(**base, turn=record.turn, turn_open=turn_open)
    messages = [
        {"role": m.role, "content": m.content}
        for m in TurnMessage.objects.filter(run_id=run_id, conversation=record.conversation).order_by("seq")[
            : call.messages
        ]
    ]
    text, error = tail_text(messages)
    return Reading(
        **base,
        turn=record.turn,
        turn_open=True,
        call=call.seq,
        text=text,
        error=error,
        outcome=_outcome(run_id, messages),
    )


def _outcome(run_id: str, messages: list[dict[str, Any]]) -> str:
    """The journal's outcome of the pick made by the last reply's tool call, if it was a pick."""
    replies = [m for m in messages if m["role"] == "assistant"]
    if not replies:
        return ""
    calls = [b.get("id") for b in replies[-1]["content"] or () if b.get("type") == "tool_use"]
    if not calls:
        return ""
    entry = JournalEntry.objects.filter(run_id=run_id, kind="pick", entry__call=calls[-1]).order_by("-seq").first()
    return str((entry.entry or {}).get("outcome") or "") if entry is not None else ""
