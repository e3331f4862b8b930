"""The runtime's exceptions, in one place so that every layer above can name them without importing the host.

HostError            a request the host cannot carry out, in words
├── RunNotHosted     the run is not driven by this host
└── NoHostAnswered   a relayed input was not taken in time
NoHost               this server process runs no host at all
SeatError            a seat cannot change hands as asked
LeaseLost            the host writing a step no longer holds the run's lease (the step is rolled back)
InputWithdrawn       a relayed input's sender stopped waiting (the step is rolled back)
"""

from __future__ import annotations

__all__ = [
    "HostError",
    "RunNotHosted",
    "NoHostAnswered",
    "NoHost",
    "NO_HOST",
    "SeatError",
    "LeaseLost",
    "InputWithdrawn",
]

#: Said when this process has no host: it was started some other way than `jr2 up`, `jr2 web` or `jr2 worker`.
NO_HOST = "no host in this server process: start it with `jr2 up` (or `jr2 web` beside `jr2 worker`)"


class HostError(Exception):
    """A request the host cannot carry out, in words (an unknown workflow, a run that has ended)."""


class RunNotHosted(HostError):
    """The run is not driven by this host: it has ended, or another host holds it."""


class NoHostAnswered(HostError):
    """An input relayed to another process was not taken in time (no worker is running): nothing was delivered."""


class NoHost(HostError):
    """This server process runs no host, so nothing can start or move a run here (`NO_HOST` says what to do)."""

    def __init__(self, message: str = NO_HOST) -> None:
        super().__init__(message)


class SeatError(Exception):
    """A seat cannot change hands as asked (no such Agent, or someone else holds it)."""


class LeaseLost(Exception):
    """The host writing a run's step no longer holds its lease (it expired and another host took the run): the
    step is rolled back, so a run is only ever written by its one holder."""


class InputWithdrawn(Exception):
    """A relayed input's sender stopped waiting before the step that answered it committed: the step is rolled
    back, so the sender's "not delivered" stays true."""
