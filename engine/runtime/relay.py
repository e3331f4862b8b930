"""Inputs for runs that another process drives: the fleet's database inbox.

In the embedded default one process hosts every run, so a Gate answer goes straight into the run's task. In a
fleet, the web process that receives it does not drive the run: it writes the input as a `RunInput` row, wakes the
hosts through the channel layer, and waits. The worker holding the run's lease takes the row, applies it as any
input, and marks it answered in the same transaction as the step it caused, so the input is delivered exactly once
however workers die: a worker killed before its commit leaves the row pending for the worker that takes the run
over; one killed after it leaves it answered. A sender that gives up first withdraws the row (compare-and-set), and
a step that would answer a withdrawn row is rolled back, so "nothing was delivered" is always true when said.

Results cross processes as JSON: `encode` on the worker, `decode` in the sender.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from channels.layers import get_channel_layer
from django.conf import settings

from engine.core.outputs import Delivery
from engine.models import Run, RunInput
from engine.runtime import store
from engine.runtime.errors import HostError, NoHostAnswered, RunNotHosted

__all__ = ["HOSTS_GROUP", "send", "wake_hosts", "encode", "decode", "RELAYED_KINDS", "Database"]

log = logging.getLogger("engine.runtime")

#: The channel layer group every run-driving host listens on, to hear of new runs and new inputs at once.
HOSTS_GROUP = "jr2-hosts"
#: What may be relayed: the outside inputs a web process hands to a run.
RELAYED_KINDS = frozenset({"gate", "cancel", "seat", "offer", "claim"})

_FIRST_POLL, _LAST_POLL = 0.005, 0.1

T = TypeVar("T")


class Database(Protocol):
    """What a sender needs of its host: the host's database thread (`Host.db`)."""

    async def db(self, fn: Callable[..., T], *args: Any) -> T: ...


async def send(host: Database, run_id: str, kind: str, args: dict[str, Any]) -> Any:
    """Hand an input to whichever host drives `run_id` and return its result, once that host has committed it."""
    if kind not in RELAYED_KINDS:
        raise ValueError(f"input kind {kind!r} cannot be relayed (relayed kinds: {', '.join(sorted(RELAYED_KINDS))})")
    status = await host.db(_status, run_id)
    if status not in Run.LIVE:
        raise RunNotHosted(f"run {run_id} has ended ({status or 'no such run'}); nothing was delivered")
    input_id = await host.db(store.post_input, run_id, kind, args)
    await wake_hosts("inputs.posted", run_id)
    wait = float(getattr(settings, "JR2_RELAY_TIMEOUT", 30))
    deadline = time.monotonic() + wait
    delay = _FIRST_POLL
    while True:
        await asyncio.sleep(delay)
        delay = min(delay * 2, _LAST_POLL)
        state, outcome, run_status = await host.db(_read, input_id, run_id)
        if state == RunInput.Status.ANSWERED:
            return decode(outcome)
        ended = run_status not in Run.LIVE
        if (ended or time.monotonic() > deadline) and await host.db(store.withdraw_input, input_id):
            if ended:
                raise RunNotHosted(
                    f"run {run_id} ended ({run_status}) before this input reached it; nothing was delivered"
                )
            raise NoHostAnswered(
                f"no worker took this input for run {run_id} within {wait:g} s (is a `jr2 worker` "
                "running?); nothing was delivered"
            )


async def wake_hosts(kind: str, run_id: str = "") -> None:
    """Tell every listening host that a run or an input waits (a lossy hint: hosts also look on their own)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(HOSTS_GROUP, {"type": kind, "run": run_id})
    except Exception as err:
        log.warning("waking the hosts failed: %r", err)


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


def _read(input_id: int, run_id: str) -> tuple[str, Any, str]:
    state, outcome = store.read_input(input_id)
    return state, outcome, _status(run_id)
