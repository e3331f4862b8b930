"""Actor slots of a workflow: Agents (the parties that pick), Gates, Effects and `fail`.

Slots are declarations. The Session never runs them: it asks its host (Turns for Agents, EffectRequested for
Effects) and takes the answers back as inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.core.statechart.callables import call_with
from engine.core.statechart.errors import ConfigError

__all__ = [
    "AgentSlot",
    "GateSlot",
    "EffectSlot",
    "FailSlot",
    "agent",
    "fail",
    "effect",
    "from_pick",
    "FromPick",
    "gate",
    "GATE",
    "WORKSPACES",
]

PROVIDERS = ("anthropic", "local", "script")
#: `agent(model="mcp", ...)`: an Agent whose seat is always played over MCP (engine/web/mcp/seat.py); its Turns wait
#: for a client.
MCP = "mcp"
#: `agent(..., workspace=...)`: no folder, a folder of its own per run, or the run's folder shared by its Agents.
WORKSPACES = ("none", "run", "shared")


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
    """A pending input from outside the run, open while its state is active: the built-in `gate`, or one made with
    `gate(workspace=..., files=...)` whose form also shows files from an Agent's workspace."""

    kind: str = "gate"
    workspace: str | None = None
    files: tuple[str, ...] = ()


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


def agent(
    model: str,
    instructions: str,
    workspace: str = "none",
    dials: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> AgentSlot:
    if model != MCP and (not isinstance(model, str) or "/" not in model or model.split("/", 1)[0] not in PROVIDERS):
        raise ConfigError(
            f"agent model {model!r} must be '<provider>/<model id>' with provider one of {PROVIDERS}, or {MCP!r} "
            "for an Agent whose seat an MCP client always plays"
        )
    if not isinstance(instructions, str) or not instructions.strip():
        raise ConfigError("an agent needs non-empty instructions")
    timeout = (dials or {}).get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigError(f"the Dial timeout_s is a number of seconds above 0; got {timeout!r}")
    if workspace not in WORKSPACES:
        raise ConfigError(
            f"agent workspace {workspace!r} must be one of {', '.join(map(repr, WORKSPACES))}: "
            '"none" (only the Menu), "run" (a folder of its own per run) or "shared" (one folder per '
            "run, shared by the run's Agents that ask for it)"
        )
    return AgentSlot(
        model=model, instructions=instructions, workspace=workspace, dials=dict(dials or {}), description=description
    )


def fail() -> FailSlot:
    return FailSlot()


def gate(*, workspace: str, files: Sequence[str] | str) -> GateSlot:
    """A Gate whose form also shows files from the workspace of the Agent `workspace` (its own folder or the
    run's shared one): `files` are paths or shell-style patterns from the top of that folder (`*` crosses `/`)."""
    if not isinstance(workspace, str) or not workspace:
        raise ConfigError(f"gate(workspace=...) names the Agent whose workspace it shows; got {workspace!r}")
    patterns = (files,) if isinstance(files, str) else tuple(files)
    if not patterns:
        raise ConfigError("gate(files=...) needs at least one path or pattern")
    for pattern in patterns:
        _relative(pattern, "gate(files=...)")
    return GateSlot(workspace=workspace, files=patterns)


def _relative(path: Any, where: str) -> None:
    """Refuse a path that is not text, is absolute, or holds `..`: it would leave the workspace."""
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"{where} takes non-empty paths; got {path!r}")
    if path.startswith("/") or ".." in path.split("/"):
        raise ConfigError(f"{where}: {path!r} leaves the workspace; give a path from its top, without '..'")


class _Effects:
    """`effect.command(...)`, `effect.http(...)`, `effect.call(fn)`."""

    @staticmethod
    def command(
        argv: Sequence[str] | str,
        cwd: str | None = None,
        timeout: float = 600.0,
        env: Mapping[str, str] | None = None,
        idempotent: bool = False,
        workspace: str | None = None,
    ) -> EffectSlot:
        """`workspace="<agent>"` runs the command in that Agent's workspace folder of the run (its own or the shared
        one), so it works on what the Agent wrote; `cwd` is then a folder inside it."""
        spec: dict[str, Any] = {
            "argv": argv if isinstance(argv, str) else list(argv),
            "cwd": cwd,
            "timeout": timeout,
            "env": dict(env or {}),
        }
        if workspace is not None:
            if not isinstance(workspace, str) or not workspace:
                raise ConfigError(f"effect.command(workspace=...) names an Agent with a workspace; got {workspace!r}")
            if cwd is not None:
                _relative(cwd, "effect.command(cwd=...) with a workspace")
            spec["workspace"] = workspace
        return EffectSlot("command", spec, idempotent)

    @staticmethod
    def http(
        url: str,
        method: str = "POST",
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        idempotent: bool = False,
    ) -> EffectSlot:
        return EffectSlot(
            "http",
            {"url": url, "method": method.upper(), "headers": dict(headers or {}), "timeout": timeout},
            idempotent,
        )

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
        params = {k: v for k, v in dict(event).items() if k not in ("type", "sender")}
        if callable(self.fill):
            return call_with(self.fill, params=params, context=context, event=event)
        return {
            key: (call_with(v, params=params, context=context, event=event) if callable(v) else params.get(v, v))
            for key, v in self.fill.items()
        }


def from_pick(fill: Callable[..., Any] | Mapping[str, Any]) -> FromPick:
    return FromPick(fill)
