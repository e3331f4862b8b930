"""Actor slots of a workflow: Agents (the parties that pick), Gates, Effects and `fail`.

Slots are declarations. The Session never runs them: it asks its host (Turns for Agents, EffectRequested for
Effects) and takes the answers back as inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

from engine.statechart.errors import ConfigError

__all__ = ["AgentSlot", "GateSlot", "EffectSlot", "FailSlot", "agent", "fail", "effect", "from_pick", "FromPick",
           "GATE"]

PROVIDERS = ("anthropic", "local", "script")


@dataclass(frozen=True)
class AgentSlot:
    """An Agent: a model that acts only by picking events from its Menu."""

    model: str
    instructions: str
    workspace: str = "none"
    dials: Mapping[str, Any] = field(default_factory=dict)
    description: str | None = None
    kind: str = "agent"

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0]


@dataclass(frozen=True)
class GateSlot:
    """The built-in `gate`: a pending input from outside the run, open while its state is active."""

    kind: str = "gate"


@dataclass(frozen=True)
class FailSlot:
    """Ends the run as failed with the `reason` of its input."""

    kind: str = "fail"


@dataclass(frozen=True)
class EffectSlot:
    """A side effect the host performs: a command, an HTTP call or a Python function. At most once unless
    idempotent."""

    effect: Literal["command", "http", "call"]
    spec: Mapping[str, Any]
    idempotent: bool = False
    fn: Callable[..., Any] | None = None
    kind: str = "effect"


GATE = GateSlot()


def agent(model: str, instructions: str, workspace: str = "none", dials: Mapping[str, Any] | None = None,
          description: str | None = None) -> AgentSlot:
    if not isinstance(model, str) or "/" not in model or model.split("/", 1)[0] not in PROVIDERS:
        raise ConfigError(f"agent model {model!r} must be '<provider>/<model id>' with provider one of {PROVIDERS}")
    if not isinstance(instructions, str) or not instructions.strip():
        raise ConfigError("an agent needs non-empty instructions")
    return AgentSlot(model=model, instructions=instructions, workspace=workspace, dials=dict(dials or {}),
                     description=description)


def fail() -> FailSlot:
    return FailSlot()


class _Effects:
    """`effect.command(...)`, `effect.http(...)`, `effect.call(fn)`."""

    @staticmethod
    def command(argv: Sequence[str] | str, cwd: str | None = None, timeout: float = 600.0,
                env: Mapping[str, str] | None = None, idempotent: bool = False) -> EffectSlot:
        return EffectSlot("command", {"argv": argv if isinstance(argv, str) else list(argv), "cwd": cwd,
                                      "timeout": timeout, "env": dict(env or {})}, idempotent)

    @staticmethod
    def http(url: str, method: str = "POST", headers: Mapping[str, str] | None = None, timeout: float = 60.0,
             idempotent: bool = False) -> EffectSlot:
        return EffectSlot("http", {"url": url, "method": method.upper(), "headers": dict(headers or {}),
                                   "timeout": timeout}, idempotent)

    @staticmethod
    def call(fn: Callable[..., Any], idempotent: bool = False) -> EffectSlot:
        if not callable(fn):
            raise ConfigError(f"effect.call takes a Python callable; got {fn!r}")
        # The module's own name, not the package the loader imported it under (that one depends on the folder's
        # path), so a run's recorded outputs do not change when the workflows folder moves.
        module = str(getattr(fn, "__module__", "?")).rsplit(".", 1)[-1]
        name = f"{module}.{getattr(fn, '__qualname__', repr(fn))}"
        return EffectSlot("call", {"function": name}, idempotent, fn=fn)


effect = _Effects()


class FromPick:
    """An Effect's input built from the pick that entered its state: `fill` maps the pick's params (and the
    context) to the input. It is a callable of `event` and `context`, so it can sit where an `input` goes."""

    def __init__(self, fill: Callable[..., Any] | Mapping[str, Any]) -> None:
        self.fill = fill

    def __call__(self, event: Any, context: Any) -> Any:
        from engine.statechart.callables import call_with
        params = {k: v for k, v in dict(event).items() if k not in ("type", "sender")}
        if callable(self.fill):
            return call_with(self.fill, params=params, context=context, event=event)
        return {key: (call_with(v, params=params, context=context, event=event) if callable(v) else params.get(v, v))
                for key, v in self.fill.items()}


def from_pick(fill: Callable[..., Any] | Mapping[str, Any]) -> FromPick:
    return FromPick(fill)
