"""Inputs people send to runs (Gate answers, cancels, seat changes, seats' picks): kept durably, delivered in
order, exactly once, and never withdrawn.

Every such input is first written as a `RunInput` row (after its sender checked it against the run's committed
view), then handed to the host that drives the run: straight into the run's inbox when this process drives it,
else through the database, waking the hosts through the channel layer. The host holding the run's lease applies
it as any input and settles the row, delivered or refused with the reason in words, in the same transaction as
the step it caused, so it is delivered exactly once however workers die: a worker killed before its commit leaves
the row pending for the worker that takes the run over, or for the first worker to start; one killed after it
leaves it settled.

The sender waits at most `JR2_RELAY_WAIT` (2 s) for that: settled by then, it gets the run's answer as before;
else `InputPending`, which the API answers with 202 and the address of the input's outcome. A row is never taken
back: an input for a run that ended before any host took it is refused, saying so.

Results cross processes as JSON: `encode` on the worker, `decode` in the sender.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

from engine.core.outputs import Delivery
from engine.core.text import without_nul
from engine.models import Run, RunInput
from engine.runtime import store, telemetry
from engine.runtime.errors import HostError, InputPending, RunNotHosted
from engine.runtime.notify import run_group
from engine.runtime.store.inputs import verdict, why_closed
from engine.runtime.store.ops import Op

__all__ = [
    "HOSTS_GROUP",
    "send",
    "post",
    "deliver_here",
    "Keeping",
    "KeptWithStep",
    "keep_pending",
    "settled",
    "wake_hosts",
    "encode",
    "decode",
    "RELAYED_KINDS",
    "Database",
]

log = logging.getLogger("engine.runtime")

#: The channel layer group every run-driving host listens on, to hear of new runs and new inputs at once.
HOSTS_GROUP = "jr2-hosts"
#: What may be relayed: the outside inputs a person hands to a run.
RELAYED_KINDS = frozenset({"gate", "cancel", "seat", "offer", "claim"})

_FIRST_POLL, _LAST_POLL = 0.005, 0.1

T = TypeVar("T")


class Database(Protocol):
    """What a sender needs of its host: the host's database thread (`Host.db`)."""

    async def db(self, fn: Callable[..., T], *args: Any) -> T: ...


def relay_wait() -> float:
    """How long a sender waits for its input to be delivered before it answers "accepted, pending"."""
    return float(getattr(settings, "JR2_RELAY_WAIT", 2.0))


async def post(host: Database, run_id: str, kind: str, args: dict[str, Any], sender: str = "") -> int:
    """Keep an input for a live run, durably and in order; its id. RunNotHosted: the run has ended."""
    if kind not in RELAYED_KINDS:
        raise ValueError(f"input kind {kind!r} cannot be relayed (relayed kinds: {', '.join(sorted(RELAYED_KINDS))})")
    status = await host.db(_status, run_id)
    if status not in Run.LIVE:
        raise RunNotHosted(f"run {run_id} has ended ({status or 'no such run'}); nothing was delivered")
    return await host.db(store.post_input, run_id, kind, args, sender)


async def send(host: Database, run_id: str, kind: str, args: dict[str, Any], sender: str = "") -> Any:
    """Hand an input to whichever host drives `run_id`, through the database; the run's answer once that host has
    committed it, or InputPending when none did within `JR2_RELAY_WAIT` (the input stays, to be delivered)."""
    input_id = await post(host, run_id, kind, args, sender)
    await wake_hosts("inputs.posted", run_id)
    return await settled(host, run_id, input_id)


async def settled(host: Database, run_id: str, input_id: int) -> Any:
    """The run's answer to input `input_id`, polled (5 ms, doubling to 100 ms) for up to `JR2_RELAY_WAIT`."""
    deadline = time.monotonic() + relay_wait()
    delay = _FIRST_POLL
    while True:
        await asyncio.sleep(delay)
        delay = min(delay * 2, _LAST_POLL)
        state, outcome = await host.db(store.read_input, input_id)
        if state != RunInput.Status.PENDING:
            if outcome is None:  # refused without reaching the run: it ended first
                reason = await host.db(lambda: RunInput.objects.values_list("reason", flat=True).get(id=input_id))
                raise RunNotHosted(f"run {run_id}: {reason}; nothing was delivered")
            return decode(outcome)
        if time.monotonic() > deadline:
            telemetry.relay_waited()
            await _tell_pages(run_id)
            raise InputPending(run_id, input_id)


class Local(Database, Protocol):
    """What the embedded path needs of its host: its database thread and its owner's name."""

    owner: str


class LocalDriver(Protocol):
    """The run's driver in this process (engine/runtime/driver.py's RunDriver), as the embedded path reaches it."""

    def relayed(self, input_id: int, kind: str, args: dict[str, Any]) -> asyncio.Future[Any]: ...

    def keep_here(self, keeping: Keeping) -> asyncio.Future[Any] | None: ...

    def adopt(self, input_id: int, future: asyncio.Future[Any]) -> None: ...


@dataclass
class Keeping:
    """A Gate answer sent in this process to a run its driver here holds. Its RunInput row is written in the
    transaction of the step it causes, settled (`KeptWithStep`), or, when its sender stops waiting first, pending
    on its own (`keep_pending`), and settled by the step later. `row_id` is set on the host's database thread only
    (when a transaction that wrote the row has committed), so the two never both write it."""

    run_id: str
    kind: str
    args: dict[str, Any]
    sender: str
    row_id: int | None = None


@dataclass
class KeptWithStep(Op):
    """A Gate answer's RunInput row, written by the step it caused, with the run's verdict: delivered, or refused
    with the reason in words (as `store.InputAnswered` settles a row kept before)."""

    keeping: Keeping
    outcome: Any
    owner: str
    gate: str = ""

    def apply(self, run_id: str, now: dt.datetime) -> None:
        keeping = self.keeping
        if keeping.row_id is not None:  # kept pending while its sender waited no longer: settled now
            store.InputAnswered(keeping.row_id, self.outcome, self.owner, keeping.kind, self.gate).apply(run_id, now)
            return
        status, reason, closed = verdict(keeping.kind, self.outcome)
        if closed and self.gate:
            reason = f"{reason}: {why_closed(run_id, self.gate)}"
        row = RunInput.objects.create(
            run_id=run_id,
            kind=keeping.kind,
            args=json.dumps(keeping.args, default=str),
            sent_by=keeping.sender,
            status=status,
            reason=without_nul(reason),
            outcome=without_nul(self.outcome),
            answered_by=self.owner,
            answered_at=now,
        )
        transaction.on_commit(lambda: setattr(keeping, "row_id", row.id))  # a group rolled back wrote nothing


def keep_pending(keeping: Keeping, driver: LocalDriver, future: asyncio.Future[Any]) -> int:
    """On the host's database thread, when the sender stops waiting: the answer's row, pending unless its step
    has committed it already, so the sender can be told where its outcome will be. The driver takes the row as
    the input in its inbox already, so the host's rounds, which read pending rows, do not apply it twice."""
    if keeping.row_id is None:
        keeping.row_id = store.post_input(keeping.run_id, keeping.kind, keeping.args, keeping.sender)
        driver.adopt(keeping.row_id, future)
    return keeping.row_id


async def deliver_here(
    host: Local, driver: LocalDriver, run_id: str, kind: str, args: dict[str, Any], sender: str = ""
) -> tuple[int, Any]:
    """The embedded path: an input for a run this process drives, handed straight to its task; (its id, the run's
    answer). A Gate answer's row is written by the step it causes, in the step's own transaction (`Keeping`): an
    answer that is delivered, or refused by the run, is kept with its verdict, and one that never reaches a commit
    (the run ended first, the step failed) writes nothing and its sender is told. One whose sender stops waiting
    (`JR2_RELAY_WAIT`) is kept pending first, and delivered in order. Other inputs are kept first, as any kept
    input (engine/runtime/kept.py), without reading the run's status: its driver here holds the lease, so the run
    is live, and one that ended before the step refuses it, in the row."""
    if kind not in RELAYED_KINDS:
        raise ValueError(f"input kind {kind!r} cannot be relayed (relayed kinds: {', '.join(sorted(RELAYED_KINDS))})")
    keeping = Keeping(run_id, kind, args, sender)
    future = driver.keep_here(keeping) if kind == "gate" else None
    if future is None:
        input_id = await host.db(store.post_input, run_id, kind, args, sender)
        return input_id, await within_wait(driver.relayed(input_id, kind, args), run_id, input_id)
    try:
        result = await asyncio.wait_for(asyncio.shield(future), relay_wait())
    except TimeoutError:
        input_id = await host.db(keep_pending, keeping, driver, future)
        telemetry.relay_waited()
        await _tell_pages(run_id)
        raise InputPending(run_id, input_id) from None
    return keeping.row_id or 0, result


async def within_wait(future: asyncio.Future[T], run_id: str, input_id: int) -> T:
    """A local run's answer to an input, if it comes within `JR2_RELAY_WAIT`; else InputPending (the run's task
    still delivers it, in order)."""
    try:
        return await asyncio.wait_for(asyncio.shield(future), relay_wait())
    except TimeoutError:
        telemetry.relay_waited()
        await _tell_pages(run_id)
        raise InputPending(run_id, input_id) from None


async def wake_hosts(kind: str, run_id: str = "") -> None:
    """Tell every listening host that a run or an input waits (a lossy hint: hosts also look on their own)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(HOSTS_GROUP, {"type": kind, "run": run_id})
    except Exception as err:
        log.warning("waking the hosts failed: %r", err)


async def _tell_pages(run_id: str) -> None:
    """The run's open pages show an input kept but not delivered in time, pending (no commit moved the run:
    `updated` is empty, so each page draws itself again)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(run_group(run_id), {"type": "run.updated", "run": run_id, "updated": ""})
    except Exception as err:
        log.warning("telling the run's pages failed: %r", err)


def encode(result: Any) -> dict[str, Any]:
    """A run's answer to an input, as JSON for its sender in another process."""
    if isinstance(result, Delivery):
        return {
            "delivery": {
                "outcome": result.outcome,
                "error": result.error,
                "accepts": list(result.accepts),
                "code": result.code,
            }
        }
    if isinstance(result, Exception):
        return {"error": str(result)}
    return {"value": result if isinstance(result, (str, int, float, bool, type(None))) else str(result)}


def decode(outcome: Any) -> Any:
    """The sender's side of `encode`: a Delivery, an error (returned, as the host returns a seat's refusal), or a
    value."""
    if not isinstance(outcome, dict):
        return outcome
    if "delivery" in outcome:
        found = outcome["delivery"]
        return Delivery(
            found["outcome"],
            error=found.get("error"),
            accepts=tuple(found.get("accepts") or ()),
            code=found.get("code", ""),
        )
    if "error" in outcome:
        return HostError(outcome["error"])
    return outcome.get("value")


def _status(run_id: str) -> str:
    """The run's status; an imported run (read-only, never hosted) says so instead, so nothing is relayed to it."""
    row = Run.objects.filter(id=run_id).values_list("status", "imported_from").first()
    if row is None:
        return ""
    return "imported, read-only" if row[1] else str(row[0])
