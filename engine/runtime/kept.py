"""`KeptInputs`: how a run's driver takes the inputs people sent it, kept as RunInput rows (engine/runtime/relay.py).

Each is applied once, in the order it was sent, its row settled with the step it causes. A row is seen again (the
host's rounds read pending rows too): the future of its first sighting is returned, and a failed try lets it be
taken again. A seat's pick is handed to its Turn, and an input for a run that has ended is refused, without a step:
its row is settled on its own, and the run's pages are told.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from engine.core.session import Session
from engine.runtime import relay, store
from engine.runtime.plan import ended
from engine.runtime.providers import human

__all__ = ["KeptInputs", "Enqueue"]

T = TypeVar("T")

#: Puts an input into the run's inbox as a step (its args, the future its sender awaits).
Enqueue = Callable[[dict[str, Any], "asyncio.Future[Any]"], None]


class _Host(Protocol):
    owner: str

    async def db(self, fn: Callable[..., T], *args: Any) -> T: ...

    def notify(
        self, run_id: str, workflow: str, status: str, seq: int, updated: Any = None, gates: bool = False
    ) -> None: ...

    def replied(self, input_id: int, outcome: dict[str, Any]) -> None: ...


class _Driver(Protocol):
    """What of its driver the kept inputs read (engine/runtime/driver.py's RunDriver)."""

    @property
    def run_id(self) -> str: ...
    @property
    def workflow(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def session(self) -> Session: ...
    @property
    def host(self) -> _Host: ...


class KeptInputs:
    """The kept inputs one driver took, by RunInput id, with the future of each one's answer."""

    def __init__(self, driver: _Driver) -> None:
        self.driver = driver
        self._taken: dict[int, asyncio.Future[Any]] = {}

    def take(self, input_id: int, kind: str, args: dict[str, Any], enqueue: Enqueue) -> asyncio.Future[Any]:
        """The future of input `input_id`'s answer; a step's input goes to `enqueue`, once."""
        found = self._taken.get(input_id)
        if found is not None:
            return found
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._taken[input_id] = future
        future.add_done_callback(lambda done: self._forget_failed(input_id, done))
        if kind == "seat" and args.get("user") is not None:
            args = {**args, "user": tuple(args["user"])}
        driver = self.driver
        if kind != "offer" and driver.session.status == "active":
            enqueue(args, future)
            return future
        active = driver.session.status == "active"
        result = None if active else ended(driver.session, kind)
        if active:
            human.offer(driver.run_id, args["agent"], args["event"], args.get("params") or {})
        host, outcome = driver.host, relay.encode(result)
        answer = loop.create_task(host.db(store.answer_input, input_id, outcome, host.owner, kind, driver.run_id))
        answer.add_done_callback(lambda done: _settle_future(future, done, result))
        answer.add_done_callback(lambda done: _replied(host, input_id, outcome, done))
        answer.add_done_callback(  # its pages show it settled
            lambda _: host.notify(driver.run_id, driver.workflow, driver.status, driver.seq)
        )
        return future

    def pending(self) -> bool:
        """Whether an input taken is not answered yet (its step, or its row's settling, is still to come)."""
        return any(not future.done() for future in self._taken.values())

    def adopt(self, input_id: int, future: asyncio.Future[Any]) -> None:
        """Input `input_id` is in the inbox already (a Gate answer whose sender kept it pending while it waited:
        relay.keep_pending); called on the database thread, before the row can be read, so the host's rounds
        that find it pending take this future instead of queueing it again (one dict write: atomic)."""
        self._taken.setdefault(input_id, future)

    def _forget_failed(self, input_id: int, future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            self._taken.pop(input_id, None)


def _settle_future(future: asyncio.Future[Any], done: asyncio.Future[Any], result: Any) -> None:
    """Pass a database task's end on to the future its sender awaits."""
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif done.exception() is not None:
        future.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        future.set_result(result)


def _replied(host: _Host, input_id: int, outcome: dict[str, Any], done: asyncio.Future[Any]) -> None:
    """The row settled with `outcome` is committed: its sender may hear it (a row settled first by another is not)."""
    if not done.cancelled() and done.exception() is None and done.result():
        host.replied(input_id, outcome)
