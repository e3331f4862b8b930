"""The bodies the JSON API answers with, declared for the OpenAPI document: each operation lists every status it
can answer and its body, so a client (and the fuzz, tests/e2e/test_fuzz_api.py) can hold the server to them.

Values a workflow writes (inputs, context, outputs, Gate meta, journal entries) are any JSON; everything the API
itself makes is typed.
"""

from __future__ import annotations

import warnings
from typing import Any

from ninja import Schema
from pydantic import Field

from engine.web.exchange import RunExport

__all__ = [
    "Error",
    "Created",
    "Outcome",
    "ClaimOut",
    "Accepted",
    "InputOut",
    "RunRow",
    "RunPage",
    "WorkflowOut",
    "RunOut",
    "TurnOut",
    "JournalOut",
    "Forked",
    "ExportOut",
    "errors",
    "RATE_LIMITED",
]


class FieldError(Schema):
    field: str
    message: str


class Error(Schema):
    """Every error: what is wrong and what to do, and for invalid input one entry per field."""

    detail: str
    errors: list[FieldError] | None = None


class Created(Schema):
    id: str
    workflow: str
    status: str
    url: str


class Outcome(Schema):
    """An input delivered within `JR2_RELAY_WAIT`: what it did, and the run's status after it."""

    outcome: str
    run: str
    status: str


class ClaimOut(Schema):
    outcome: str = Field(description="claimed, released or broken")
    run: str
    gate: str
    by: str | None = Field(None, description="who holds the Gate now (null once released or broken)")
    until: str | None = Field(None, description="when the claim ends, ISO 8601 (null once released or broken)")


class CancelBody(Schema):
    reason: str = Field("", max_length=2000, description="why the run is cancelled, in words (optional)")


class Accepted(Schema):
    """202: the input was checked and is kept, in order, but no worker holds the run yet; it is delivered when one
    does, and `url` reports what became of it."""

    input: int
    url: str
    detail: str


class InputOut(Schema):
    """An input a person sent a run and what became of it: `status` is pending, delivered or refused (then
    `reason` says why, in words)."""

    input: int
    run: str
    kind: str = Field(
        description="gate (an answer), cancel, seat (a seat change), offer (a pick made in a seat) or claim (a Gate's "
        "claim taken, released or broken)"
    )
    status: str = Field(description="pending, delivered or refused")
    reason: str = Field(description="why it was refused, in words; empty otherwise")
    sent_by: str
    sent_at: str
    settled_at: str | None
    gate: str
    agent: str
    event: str
    url: str


class RunRow(Schema):
    id: str
    workflow: str
    status: str
    scripted: bool
    open_gates: int
    reason: str
    created_at: str
    updated_at: str


class RunPage(Schema):
    count: int
    page: int
    pages: int
    results: list[RunRow]


class WorkflowOut(Schema):
    """A workflow; one whose file failed to load has only `name`, `file`, `loaded` (false), `error`, `where`."""

    name: str
    file: str
    loaded: bool
    error: str | None = None
    where: str | None = None
    machine: str | None = None
    digest: str | None = None
    agents: dict[str, str] | None = None
    warnings: list[dict[str, Any]] | None = None
    live_runs: int | None = None
    seats: list[str] | None = None
    door: dict[str, Any] | None = None
    menus: dict[str, list[dict[str, Any]]] | None = None
    seats_data: list[dict[str, Any]] | None = None
    seats_text: str | None = None


with warnings.catch_warnings():
    # The field is named `schema`, the name clients read, though it shadows BaseModel.schema(): an alias would not
    # do, as ninja names an aliased field by its alias in `properties` but by its own name in `required`.
    warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)

    class GateEventOut(Schema):
        """An event a Gate accepts: its description and its input's JSON schema."""

        type: str
        description: str | None
        schema: dict[str, Any] | None = Field(...)  # type: ignore[assignment]


class GateClaimOut(Schema):
    by: str
    until: str = Field(description="when the claim ends, ISO 8601")


class GateOut(Schema):
    id: str
    state: str | None
    meta: Any
    events: list[GateEventOut]
    assign: list[str] | None = Field(
        None, description='whom the Gate is assigned to ("user:<name>", "group:<name>"); null: anyone who may answer'
    )
    claim: GateClaimOut | None = Field(None, description="who holds the Gate's claim now, if anyone")
    due: str | None = Field(
        None, description="when the Machine's `after` on the Gate's state fires, ISO 8601; null: no timer is set"
    )


class RunOut(Schema):
    id: str
    workflow: str
    status: str
    digest: str
    input: Any
    output: Any
    reason: str
    scripted: bool
    value: Any
    context: Any
    gates: list[GateOut]
    turns: list[dict[str, Any]]
    effects: list[dict[str, Any]]
    next_due: float | None
    seq: int
    parent: str | None
    parent_step: int | None
    forks: list[str]
    imported_from: str | None
    created_at: str
    updated_at: str


class Forked(Schema):
    id: str
    workflow: str
    status: str
    parent: str
    parent_step: int
    url: str


#: GET /api/runs/<id>/export answers the exchange format's own model (engine/web/exchange.py).
ExportOut = RunExport


class Usage(Schema):
    input: int
    output: int
    cache_read: int
    cache_write: int


class MessageOut(Schema):
    seq: int
    conversation: str
    role: str
    kind: str
    content: Any
    at: str


class CallOut(Schema):
    seq: int
    model: str
    scripted: bool
    status: str
    request: Any
    messages: int
    response: Any
    tool_calls: Any
    stop_reason: str | None
    error: str | None
    latency_ms: float | None
    usage: Usage
    started_at: str
    finished_at: str | None


class TurnOut(Schema):
    turn: str
    agent: str
    state: str
    model: str
    declared_model: str
    scripted: bool
    status: str
    reason: str | None
    dials: Any
    conversation: str
    prompt: str
    system: str
    usage: Usage
    started_at: str
    ended_at: str | None
    messages: list[MessageOut]
    calls: list[CallOut]


class EntryOut(Schema):
    seq: int
    kind: str
    entry: Any
    out: Any
    at: str


class JournalOut(Schema):
    run: str
    workflow: str
    digest: str
    seq: int
    entries: list[EntryOut]


#: A 429 carries Retry-After (seconds); declared on every operation, as any call with a wrong token counts.
RATE_LIMITED = {
    "responses": {
        429: {
            "headers": {
                "Retry-After": {
                    "description": "seconds to wait before trying again",
                    "required": True,
                    "schema": {"type": "integer"},
                }
            }
        }
    }
}


def errors(*codes: int) -> dict[int, type[Error]]:
    """The error statuses of an operation, each answered with an `Error`."""
    return {code: Error for code in codes}
