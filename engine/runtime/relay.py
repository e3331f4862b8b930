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

On the fleet the sender hears the outcome rather than polling for it: the wake-up it sends names the input and a
channel of its process (`Replies`), and the host that settles the row sends the outcome there once it is committed.
The wake-up goes to the host holding the run's lease alone (`host_group`), or to every host when none holds it. Both
messages are lossy hints: the sender still reads the row now and then, and the hosts look for inputs on their own.

Results cross processes as JSON: `encode` on the worker, `decode` in the sender.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine.core.outputs import Delivery
from engine.core.text import without_nul
from engine.models import Run, RunInput
from engine.runtime import store, telemetry
from engine.runtime.errors import HostError, InputPending, RunNotHosted
from engine.runtime.notify import notice_layer, run_group
from engine.runtime.store import rows
from engine.runtime.store.inputs import verdict, why_closed
from engine.runtime.store.ops import Op

__all__ = [
    "HOSTS_GROUP",
    "host_group",
    "send",
    "post",
    "deliver_here",
    "Keeping",
    "KeptWithStep",
    "keep_pending",
    "relayed",
    "settled",
    "wake_hosts",
    "reply",
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
#: With a reply expected on the channel layer the row is read only in case it was lost: seldom.
_FIRST_LOOK, _LAST_LOOK = 1.0, 2.0
#: The message a settling host sends to the sender's channel (`reply`).
SETTLED = "input.settled"

T = TypeVar("T")


class Database(Protocol):
    """What a sender needs of its host: the host's database thread (`Host.db`)."""

    async def db(self, fn: Callable[..., T], *args: Any) -> T: ...


def relay_wait() -> float:
    """How long a sender waits for its input to be delivered before it answers "accepted, pending"."""
    return float(getattr(settings, "JR2_RELAY_WAIT", 2.0))


async def post(host: Database, run_id: str, kind: str, args: dict[str, Any], sender: str = "") -> int:
    """Keep an input for a live run, durably and in order; its id. RunNotHosted: the run has ended."""
    return (await posted(host, run_id, kind, args, sender))[0]


async def posted(host: Database, run_id: str, kind: str, args: dict[str, Any], sender: str = "") -> tuple[int, str]:
    """`post`, and who held the run's lease when it was read ("" if nobody): the host to wake for it."""
    if kind not in RELAYED_KINDS:
        raise ValueError(f"input kind {kind!r} cannot be relayed (relayed kinds: {', '.join(sorted(RELAYED_KINDS))})")
    status, holder, input_id = await host.db(_keep, run_id, kind, args, sender)
    if input_id is None:
        raise RunNotHosted(f"run {run_id} has ended ({status or 'no such run'}); nothing was delivered")
    return input_id, holder


async def send(host: Database, run_id: str, kind: str, args: dict[str, Any], sender: str = "") -> Any:
    """Hand an input to whichever host drives `run_id`, through the database; the run's answer once that host has
    committed it, or InputPending when none did within `JR2_RELAY_WAIT` (the input stays, to be delivered)."""
    input_id, holder = await posted(host, run_id, kind, args, sender)
    return await relayed(host, run_id, input_id, holder)


async def relayed(host: Database, run_id: str, input_id: int, holder: str = "") -> Any:
    """Wake the host holding the run (`holder`; every host when "") for input `input_id`, and wait for its outcome:
    heard on this process's reply channel, or read from the row (see `settled`)."""
    replies = await Replies.here()
    waiter = replies.expect(input_id) if replies is not None else None
    try:
        channel = replies.channel if replies is not None else ""
        await wake_hosts("inputs.posted", run_id, holder=holder, input=input_id, reply=channel)
        return await settled(host, run_id, input_id, waiter)
    finally:
        if replies is not None:
            replies.forget(input_id)


async def settled(host: Database, run_id: str, input_id: int, heard: asyncio.Future[Any] | None = None) -> Any:
    """The run's answer to input `input_id` within `JR2_RELAY_WAIT`: `heard` from the settling host (its outcome,
    sent once committed), else read from the row. With no reply to wait for the row is polled, 5 ms doubling to
    100 ms; with one it is only looked at after 1 s, then every 2 s, in case the reply was lost."""
    deadline = time.monotonic() + relay_wait()
    delay, last = (_FIRST_POLL, _LAST_POLL) if heard is None else (_FIRST_LOOK, _LAST_LOOK)
    while True:
        wait = max(0.0, min(delay, deadline - time.monotonic()))
        if heard is None:
            await asyncio.sleep(wait)
        else:
            try:
                return decode(await asyncio.wait_for(asyncio.shield(heard), wait))
            except TimeoutError:
                pass
        delay = min(delay * 2, last)
        state, outcome = await host.db(store.read_input, input_id)
        if state != RunInput.Status.PENDING:
            if outcome is None:  # refused without reaching the run: it ended first
                reason = await host.db(lambda: RunInput.objects.values_list("reason", flat=True).get(id=input_id))
                raise RunNotHosted(f"run {run_id}: {reason}; nothing was delivered")
            return decode(outcome)
        if time.monotonic() >= deadline:
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
        row = {
            "run_id": run_id,
            "kind": keeping.kind,
            "args": json.dumps(keeping.args, default=str),
            "sent_by": keeping.sender,
            "status": status,
            "reason": without_nul(reason),
            "outcome": without_nul(self.outcome),
            "answered_by": self.owner,
            "answered_at": now,
        }
        row_id = rows.insert_one(RunInput, row, now)
        transaction.on_commit(lambda: setattr(keeping, "row_id", row_id))  # a group rolled back wrote nothing


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


def host_group(owner: str) -> str:
    """The channel layer group of the host `owner` alone (a group name allows few characters: a digest of it)."""
    return f"jr2-host-{hashlib.sha1(owner.encode()).hexdigest()[:20]}"


async def wake_hosts(kind: str, run_id: str = "", holder: str = "", **more: Any) -> None:
    """Tell the host `holder`, or every listening host, that a run or an input waits (a lossy hint: hosts also look
    on their own). `more` rides along (an input's id and its sender's reply channel)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(host_group(holder) if holder else HOSTS_GROUP, {"type": kind, "run": run_id, **more})
    except Exception as err:
        log.warning("waking the hosts failed: %r", err)


async def reply(channel: str, input_id: int, outcome: dict[str, Any]) -> None:
    """Tell an input's sender its outcome (`encode`d), on its reply channel: only once the row is committed."""
    layer = get_channel_layer()
    if layer is None or not channel:
        return
    try:
        await layer.send(channel, {"type": SETTLED, "input": input_id, "outcome": outcome})
    except Exception as err:
        log.warning("telling input %s's sender failed: %r", input_id, err)


class Replies:
    """This process's reply channel: the outcomes settling hosts send, handed to the senders awaiting them (one
    channel and one receiving task per event loop; `here` opens it)."""

    _open: dict[asyncio.AbstractEventLoop, Replies] = {}

    def __init__(self, layer: Any, channel: str) -> None:
        self.layer = layer
        self.channel = channel
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.task = asyncio.get_running_loop().create_task(self._receive(), name="jr2 input replies")

    @classmethod
    async def here(cls) -> Replies | None:
        """The reply channel of the running loop (None without a channel layer, or if it cannot open one)."""
        loop = asyncio.get_running_loop()
        found = cls._open.get(loop)
        if found is not None and not found.task.done():
            return found
        layer = get_channel_layer()
        if layer is None:
            return None
        try:
            channel = await layer.new_channel()
        except Exception as err:
            log.warning("opening a reply channel failed: %r", err)
            return None
        for gone in [old for old in cls._open if old.is_closed()]:
            del cls._open[gone]
        found = cls._open.get(loop)
        if found is None or found.task.done():  # another sender may have opened it meanwhile
            found = cls._open[loop] = Replies(layer, channel)
        return found

    def expect(self, input_id: int) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[input_id] = future
        return future

    def forget(self, input_id: int) -> None:
        self.waiting.pop(input_id, None)

    async def _receive(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("hearing input replies failed: %r", err)
                await asyncio.sleep(1.0)
                continue
            future = self.waiting.get(message.get("input")) if message.get("type") == SETTLED else None
            if future is not None and not future.done():
                future.set_result(message.get("outcome"))


async def _tell_pages(run_id: str) -> None:
    """The run's open pages show an input kept but not delivered in time, pending (no commit moved the run:
    `updated` is empty, so each page draws itself again)."""
    layer = notice_layer()
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


def _keep(run_id: str, kind: str, args: dict[str, Any], sender: str) -> tuple[str, str, int | None]:
    """The run's status and lease holder (`_status`), and the input kept for it when it is live (one trip to the
    database thread)."""
    status, holder = _status(run_id)
    if status not in Run.LIVE:
        return status, holder, None
    return status, holder, store.post_input(run_id, kind, args, sender)


def _status(run_id: str) -> tuple[str, str]:
    """The run's status and the holder of its lease ("" if none, or its lease ran out); an imported run
    (read-only, never hosted) says so instead, so nothing is relayed to it."""
    row = Run.objects.filter(id=run_id).values_list("status", "imported_from", "lease_owner", "lease_expires").first()
    if row is None:
        return "", ""
    status, imported, owner, expires = row
    holder = owner if owner and expires is not None and expires > timezone.now() else ""
    return ("imported, read-only", "") if imported else (str(status), holder)
