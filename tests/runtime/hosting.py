"""Driving a Host from a test: run a body on a started host, and wait for what the database says."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import pytest

from engine.models import JournalEntry, ModelCall, Run, TurnMessage, TurnRecord
from engine.runtime.host import Host
from engine.runtime.providers import aclose_all
from workflows.notes import machine as notes_machine

__all__ = ["hosted", "fleet", "until", "status", "records", "bounded", "scripted", "NOTES_DOOR", "NOTES_GATE"]

#: A notes run's door input, and the Gate it waits at.
NOTES_DOOR = {"changes": "Faster start-up."}
NOTES_GATE = "writing.asking"

T = TypeVar("T")

#: At most this long for a test's body on its hosts, and for each host's stop: a test that hangs fails, naming
#: where every task of its loop waits, instead of holding the whole suite up.
BOUND = 120.0


@pytest.fixture
def scripted(settings: Any) -> None:
    """The workflows' scripted stand-ins play their Agents (offline: no model is asked)."""
    settings.JR2_SCRIPTED = True


async def bounded(what: str, awaitable: Awaitable[T], seconds: float = BOUND) -> T:
    """`awaitable`, or an AssertionError after `seconds` that shows the stack of every task still waiting (its own
    too, taken before it is cancelled)."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if task in done:
        return task.result()
    stacks = io.StringIO()
    for waiting in asyncio.all_tasks():
        waiting.print_stack(file=stacks)
    task.cancel()
    raise AssertionError(f"{what} did not finish within {seconds:g} s; the tasks waiting:\n{stacks.getvalue()}")


def hosted(
    workflows: Mapping[str, Any], body: Callable[[Host], Awaitable[None]], owner: str = "test-host", **kwargs: Any
) -> None:
    """Start a Host on `workflows`, run `body(host)`, then stop the host and close the providers' connections."""

    async def main() -> None:
        host = Host(workflows, owner=owner, **kwargs)
        await host.start()
        try:
            await bounded("the test's body", body(host))
        finally:
            await bounded(f"stopping host {host.owner}", host.stop())
            await aclose_all()

    asyncio.run(main())


def fleet(
    body: Callable[..., Awaitable[None]],
    *roles: str,
    workflows: dict[str, Any] | None = None,
    scan_seconds: float = 0.05,
    **kwargs: Any,
) -> None:
    """Start one host per role (owners web-1, worker-1, ...; `workflows` defaults to notes), as separate processes
    of a fleet would be (each its own database thread), run `body(*hosts)`, stop them all."""

    async def main() -> None:
        hosts, counts = [], {"web": 0, "worker": 0}
        for role in roles:
            counts[role] += 1
            hosts.append(
                Host(
                    workflows or {"notes": notes_machine},
                    owner=f"{role}-{counts[role]}",
                    role=role,
                    scan_seconds=scan_seconds,
                    **kwargs,
                )
            )
        for host in hosts:
            await host.start()
        try:
            await bounded("the test's body", body(*hosts))
        finally:
            for host in hosts:
                if host.ready.is_set():
                    await bounded(f"stopping host {host.owner}", host.stop())
            await aclose_all()

    asyncio.run(main())


async def until(host: Host, check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """Poll the database (on the host's thread) until `check` gives something truthy (else the test fails, saying
    it timed out waiting for `what`)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await host.db(check)
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.02)


def status(run_id: str, *wanted: str) -> Callable[[], Run | None]:
    return lambda: Run.objects.filter(id=run_id, status__in=wanted).first()


def records(run_id: str) -> dict[str, Any]:
    """Everything the run wrote, for assertions (read on the host's database thread)."""
    return {
        "run": Run.objects.get(id=run_id),
        "journal": [e.entry for e in JournalEntry.objects.filter(run_id=run_id).order_by("seq")],
        "turns": list(TurnRecord.objects.filter(run_id=run_id).order_by("started_at", "id")),
        "calls": list(ModelCall.objects.filter(run_id=run_id).order_by("seq")),
        "messages": list(TurnMessage.objects.filter(run_id=run_id).select_related("turn").order_by("id")),
    }
