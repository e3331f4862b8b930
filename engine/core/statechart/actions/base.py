"""What every built-in action shares: a pure `resolve`, and the data (`ExecutableAction`) a host executes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.core.statechart.callables import call_with

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["BuiltinAction", "ExecutableAction", "resolve_value"]


@dataclass(eq=False)
class ExecutableAction:
    """One action a transition asks a host to perform.

    `type` is the built-in's type (`xstate.sendTo`, ...) or the custom action's name; `params` is resolved data;
    `exec` is the user callable of a custom action (None for built-ins, which a host executes by type);
    `info` holds the `context` and `event` the action was resolved with.
    """

    type: str
    params: Any = None
    exec: Callable[..., Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def run(self) -> Any:
        """Run a custom action's callable with the arguments it names."""
        if self.exec is None:
            return None
        return call_with(self.exec, params=self.params, **self.info)

    def __repr__(self) -> str:
        return f"ExecutableAction(type={self.type!r}, params={self.params!r})"


def resolve_value(value: Any, args: dict[str, Any], params: Any = None) -> Any:
    """A config value that may be a callable of the action arguments."""
    if callable(value) and not isinstance(value, type):
        return call_with(value, params=params, **args)
    return value


class BuiltinAction:
    """A built-in action. `resolve` is pure: it returns the next snapshot, the params a host needs, and any
    further actions to resolve in place (as `enqueue_actions` does). `executes` says whether a host must act."""

    type: str = "xstate.builtin"
    executes: bool = True

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        raise NotImplementedError(f"{type(self).__name__} must implement resolve()")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(f"{self.type} is an action object: put it in a config's entry/exit/actions, do not call it")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
