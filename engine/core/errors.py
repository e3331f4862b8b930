"""The authoring surface's errors."""

from engine.core.statechart.errors import StatechartError

__all__ = ["EventDefError", "MachineError"]


class EventDefError(StatechartError):
    """`define_event` refused its arguments."""


class MachineError(StatechartError):
    """`create_machine` refused a Machine: the message names the Machine, the state path and the event."""

    def __init__(
        self, message: str, machine: str | None = None, state: str | None = None, event: str | None = None
    ) -> None:
        super().__init__(message)
        self.machine, self.state, self.event = machine, state, event
