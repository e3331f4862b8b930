"""The runtime's exceptions, in one place so that every layer above can name them without importing the host.

HostError            a request the host cannot carry out, in words
├── RunNotHosted     the run is not driven by this host
└── InputPending     an input was accepted and kept, but no host delivered it within `JR2_RELAY_WAIT`
NoHost               this server process runs no host at all
SeatError            a seat cannot change hands as asked
LeaseLost            the host writing a step no longer holds the run's lease (the step is rolled back)
InputSettled         a relayed input was already delivered or refused (the step that would answer it again is
                     rolled back)
"""

from __future__ import annotations

__all__ = [
    "HostError",
    "RunNotHosted",
    "InputPending",
    "NoHost",
    "NO_HOST",
    "SeatError",
    "LeaseLost",
    "InputSettled",
]

#: Said when this process has no host: it was started some other way than `jr2 up`, `jr2 web` or `jr2 worker`.
NO_HOST = "no host in this server process: start it with `jr2 up` (or `jr2 web` beside `jr2 worker`)"


class HostError(Exception):
    """A request the host cannot carry out, in words (an unknown workflow, a run that has ended)."""


class RunNotHosted(HostError):
    """The run is not driven by this host: it has ended, or another host holds it."""


class InputPending(HostError):
    """An input was checked and stored durably, in order, but no host delivered it within `JR2_RELAY_WAIT` (no
    worker holds the run yet): it is delivered when one does, and `GET /api/runs/<run>/inputs/<input>` tells."""

    def __init__(self, run_id: str, input_id: int) -> None:
        self.run_id = run_id
        self.input_id = input_id
        super().__init__(
            f"accepted: no worker has taken run {run_id} yet, so input {input_id} is kept and will be delivered, "
            "in order, when one does"
        )

    @property
    def url(self) -> str:
        """Where its outcome is read."""
        return f"/api/runs/{self.run_id}/inputs/{self.input_id}"


class NoHost(HostError):
    """This server process runs no host, so nothing can start or move a run here (`NO_HOST` says what to do)."""

    def __init__(self, message: str = NO_HOST) -> None:
        super().__init__(message)


class SeatError(Exception):
    """A seat cannot change hands as asked (no such Agent, or someone else holds it)."""


class LeaseLost(Exception):
    """The host writing a run's step no longer holds its lease (it expired and another host took the run): the
    step is rolled back, so a run is only ever written by its one holder."""


class InputSettled(Exception):
    """A step would answer a relayed input that is no longer pending (another step delivered it, or it was refused
    because its run ended): the step is rolled back, so an input is delivered exactly once."""
