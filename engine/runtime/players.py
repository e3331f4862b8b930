"""Who plays an Agent's Turn: a person holding its seat, its declared model, or, offline, its scripted stand-in.

A workflow declares `agent(model="anthropic/claude-haiku-5-5", ...)`. When that provider cannot be reached because
its key is not set (or `JR2_SCRIPTED` is on), and a script is registered as `<workflow>.<agent>`
(`@engine.scripted("notes.writer")`), the Turn is played by that script instead, and every record of it says so.
Without a stand-in, the declared model is used and its missing key becomes the Turn's fault, in words.

`JR2_MODEL_OVERRIDE` (a dict of `"<workflow>.<agent>"` -> model, JSON in the environment) makes a deployment play an
Agent on another model than the one its workflow declares, without editing the workflow:
`JR2_MODEL_OVERRIDE='{"notes.writer": "local/smollm2"}'` (what `make demo-local` sets). The override then counts as
the Agent's model for everything above (its key, its stand-in); records keep the declared one beside it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from engine.core.scripts import script_named

__all__ = ["Player", "player_for", "MCP_WAITING", "offline_notice", "model_overrides", "check_model_overrides", "KEYS"]

#: Who plays the seat of an `agent(model="mcp")` while no MCP client holds it: its Turns wait for one.
MCP_WAITING = "mcp/waiting"

#: The environment variable each provider needs; a provider not listed needs none.
KEYS = {"anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True)
class Player:
    """`model` is what is sent to `provider_for` ("script/notes.writer" for a stand-in)."""

    model: str
    declared: str
    scripted: bool
    #: The Agent whose seat this is, for the words of a seat that waits for an MCP client.
    seat: str = ""

    @property
    def human(self) -> str | None:
        """The username of the person playing, or None for a model."""
        return self.model.split("/", 1)[1] if self.model.startswith("human/") else None

    @property
    def label(self) -> str:
        """How a run shows who played the Turn."""
        if self.model == MCP_WAITING:
            return f"waiting for an MCP client to take the {self.seat or 'Agent'}'s seat"
        if self.model.startswith("mcp/"):
            return f"{self.model} (an MCP client, in the seat of {self.declared})"
        if self.human:
            return f"{self.human} (a person, in the seat of {self.declared})"
        if self.scripted and self.model != self.declared:
            return f"{self.model} (scripted stand-in for {self.declared})"
        if self.scripted:
            return f"{self.model} (scripted)"
        if self.model != self.declared:
            return f"{self.model} (JR2_MODEL_OVERRIDE, declared {self.declared})"
        return self.model


def _missing_key(prefix: str) -> str | None:
    key = KEYS.get(prefix)
    return key if key is not None and not os.environ.get(key) else None


def player_for(workflow: str, agent: str, declared: str, human: str | None = None) -> Player:
    """`human` is the username of a person holding the Agent's seat in the run: they play it (`mcp/<username> via
    <client>` when they hold it from an MCP client, engine/web/mcp/seat.py)."""
    if human and human.startswith("mcp/"):
        return Player(human, declared, False)
    if human:
        return Player(f"human/{human}", declared, False)
    stand_in = f"{workflow}.{agent}"
    model = model_overrides().get(stand_in, declared)
    if model == "mcp":
        return Player(MCP_WAITING, declared, False, agent)
    prefix = model.split("/", 1)[0]
    if prefix == "script":
        return Player(model, declared, True)
    offline = getattr(settings, "JR2_SCRIPTED", False) or _missing_key(prefix) is not None
    if offline and script_named(stand_in) is not None:
        return Player(f"script/{stand_in}", declared, True)
    return Player(model, declared, False)


def model_overrides() -> dict[str, str]:
    """The setting JR2_MODEL_OVERRIDE as a dict of "<workflow>.<agent>" -> model; ValueError, naming what is wrong,
    when it is not such a dict (`jr2 up` checks it before serving, so a run never meets a bad one)."""
    value: Any = getattr(settings, "JR2_MODEL_OVERRIDE", None) or {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(
                f'JR2_MODEL_OVERRIDE must be a JSON object of "<workflow>.<agent>": "<provider>/<model>" '
                f'(e.g. {{"notes.writer": "local/smollm2"}}); it is not JSON: {err}'
            ) from None
    if not isinstance(value, Mapping):
        raise ValueError(
            f'JR2_MODEL_OVERRIDE must be an object of "<workflow>.<agent>": "<provider>/<model>"; got '
            f"{type(value).__name__}"
        )
    for key, model in value.items():
        prefix, _, model_id = model.partition("/") if isinstance(model, str) else ("", "", "")
        if not prefix or not model_id:
            raise ValueError(f'JR2_MODEL_OVERRIDE[{key!r}] must be a model "<provider>/<model id>"; got {model!r}')
    return {str(key): value[key] for key in value}


def check_model_overrides(agents: Mapping[str, str], providers: Mapping[str, str]) -> list[str]:
    """What is wrong with JR2_MODEL_OVERRIDE against the loaded Agents ("<workflow>.<agent>" -> declared model) and
    the provider prefixes: an empty list when nothing is."""
    try:
        overrides = model_overrides()
    except ValueError as err:
        return [str(err)]
    problems = []
    for key, model in overrides.items():
        if key not in agents:
            problems.append(
                f"JR2_MODEL_OVERRIDE names {key!r}, which is no loaded workflow's Agent (the Agents: "
                f"{', '.join(sorted(agents)) or 'none'})"
            )
        prefix = model.split("/", 1)[0]
        if prefix not in providers:
            problems.append(
                f"JR2_MODEL_OVERRIDE[{key!r}] is {model!r}, whose provider {prefix!r} is not one of "
                f"{', '.join(sorted(providers))} (setting JR2_PROVIDERS)"
            )
    return problems


def offline_notice(models: dict[str, str]) -> list[str]:
    """Lines for `jr2 up` to print: which Agents will run scripted because a key is missing (or JR2_SCRIPTED)."""
    lines = []
    for prefix in sorted({m.split("/", 1)[0] for m in models.values()}):
        key = _missing_key(prefix)
        if getattr(settings, "JR2_SCRIPTED", False):
            why = "JR2_SCRIPTED=1"
        elif key is not None:
            why = f"{key} is not set"
        else:
            continue
        agents = sorted(name for name, model in models.items() if model.startswith(prefix + "/"))
        with_script = [a for a in agents if script_named(a) is not None]
        without = [a for a in agents if script_named(a) is None]
        if with_script:
            lines.append(f"{why}: offline demo — these Agents run their scripted stand-ins: {', '.join(with_script)}")
        if without:
            lines.append(
                f"{why}: these Agents have no scripted stand-in and will fault when they run: {', '.join(without)}"
            )
    return lines
