"""The statechart's own errors: one base class, so a host can catch everything the interpreter refuses."""

__all__ = ["GuardError", "StatechartError", "ConfigError", "EventError", "SnapshotError", "ImplementationError"]


class StatechartError(ValueError):
    """Base of every error the interpreter raises about bad input.

    StatechartError
     ├── ConfigError          a machine config that cannot be built (unknown target, bad initial, ...)
     ├── ImplementationError  a named guard/action/actor/delay that is not registered
     ├── EventError           an event that is not an event (no string `type`, the wildcard)
     └── SnapshotError        a snapshot that does not belong to this machine
    """


class ConfigError(StatechartError):
    pass


class ImplementationError(StatechartError):
    pass


class EventError(StatechartError):
    pass


class SnapshotError(StatechartError):
    pass


class GuardError(RuntimeError):
    """A guard raised while a transition was being chosen; the original exception is its `__cause__`."""
