"""`DbThread`: the host's one database thread, which commits the steps that are ready together (group commit).

Every database call of a host runs here, one after another in the order they were made, so a run's records are
committed in the order its task made them and no connection is held while a model is called. When several
runs' steps (`store.commit`, `store.write`) wait in the queue back to back, the thread writes them in one
transaction (`store.commit_group`): with a thousand runs moving, or ten Gates answered at once, each step no
longer waits for every other step's own transaction. A step's sender still hears of it only after the
transaction that wrote it has committed (journal first, then tell), and each step is still fenced by its lease.

The waiting callers are woken with one call into their event loop per group, not one per call.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DatabaseError, connections

from engine.runtime import store

__all__ = ["DbThread", "GROUP_MOST"]

T = TypeVar("T")

#: At most this many steps in one group: the first of them waits for the last one's writing.
GROUP_MOST = 64

_Job = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class DbThread:
    """One thread and its queue of calls (see the module docstring). Started by the first call."""

    def __init__(self, name: str = "jr2-db", most: int = GROUP_MOST) -> None:
        self.name = name
        self.most = most
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: The thread waits for a call: only then does a new call wake it (a busy thread takes the next call
        #: without being told, and telling it each time was a tenth of the event loop's share of a start).
        self._idle = False

    def call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
        """Queue `fn(*args)`; the future gets its result (or its exception) on the caller's event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the host's database thread was shut down")
            self._jobs.append((fn, args, loop, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
            elif self._idle:
                self._ready.notify()
        return future

    def shutdown(self, wait: bool = True) -> None:
        """Run what is queued, then end the thread."""
        with self._ready:
            self._closed = True
            self._ready.notify()
            thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def _take(self) -> list[_Job] | None:
        """The next call, or the run of grouped calls queued back to back from the head; None once shut down."""
        with self._ready:
            while not self._jobs and not self._closed:
                self._idle = True
                self._ready.wait()
                self._idle = False
            if not self._jobs:
                return None
            taken = [self._jobs.popleft()]
            if taken[0][0] in store.GROUPED:
                while self._jobs and self._jobs[0][0] in store.GROUPED and len(taken) < self.most:
                    taken.append(self._jobs.popleft())
            return taken

    def _serve(self) -> None:
        while (jobs := self._take()) is not None:
            if len(jobs) == 1:
                fn, args, _, _ = jobs[0]
                results: list[tuple[bool, Any]] = [_one(fn, args)]
            else:
                group = store.commit_group([(fn, args) for fn, args, _, _ in jobs])
                results = [(not isinstance(r, Exception), r) for r in group]
                if any(isinstance(r, DatabaseError) for r in group):
                    _drop_broken()
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
            for (_, _, loop, future), (ok, value) in zip(jobs, results):
                by_loop.setdefault(loop, []).append((future, ok, value))
            for loop, settled in by_loop.items():
                try:
                    loop.call_soon_threadsafe(_settle, settled)
                except RuntimeError:
                    pass  # the loop closed: nobody waits for these any more


def _one(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """Call `fn`; when the database fails it, drop this thread's connection if it is broken (the server restarted,
    or killed it), so the next call connects afresh instead of failing the same way for the host's whole life."""
    try:
        return True, fn(*args)
    except DatabaseError as err:
        _drop_broken()
        return False, err
    except BaseException as err:
        return False, err


def _drop_broken() -> None:
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()


def _settle(settled: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in settled:
        if future.done():  # its caller was cancelled
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
