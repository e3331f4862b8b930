"""Who plays an Agent's Turn: a person holding its seat, its declared model, or, offline, its scripted stand-in.

A workflow declares `agent(model="anthropic/claude-haiku-5-5", ...)`. When that provider cannot be reached because
its key is not set (or `JR2_SCRIPTED` is on), and a script is registered as `<workflow>.<agent>`
(`@engine.scripted("notes.writer")`), the Turn is played by that script instead, and every record of it says so.
Without a stand-in, the declared model is used and its missing key becomes the Turn's fault, in words.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

from engine.scripts import script_named

__all__ = ["Player", "player_for", "offline_notice", "KEYS"]

#: The environment variable each provider needs; a provider not listed needs none.
KEYS = {"anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True)
class Player:
    """`model` is what is sent to `provider_for` ("script/notes.writer" for a stand-in)."""

    model: str
    declared: str
    scripted: bool

    @property
    def human(self) -> str | None:
        """The username of the person playing, or None for a model."""
        return self.model.split("/", 1)[1] if self.model.startswith("human/") else None

    @property
    def label(self) -> str:
        """How a run shows who played the Turn."""
        if self.human:
            return f"{self.human} (a person, in the seat of {self.declared})"
        if self.scripted and self.model != self.declared:
            return f"{self.model} (scripted stand-in for {self.declared})"
        return f"{self.model} (scripted)" if self.scripted else self.model


def _missing_key(prefix: str) -> str | None:
    key = KEYS.get(prefix)
    return key if key is not None and not os.environ.get(key) else None


def player_for(workflow: str, agent: str, declared: str, human: str | None = None) -> Player:
    """`human` is the username of a person holding the Agent's seat in the run: they play it."""
    if human:
        return Player(f"human/{human}", declared, False)
    prefix = declared.split("/", 1)[0]
    if prefix == "script":
        return Player(declared, declared, True)
    stand_in = f"{workflow}.{agent}"
    offline = getattr(settings, "JR2_SCRIPTED", False) or _missing_key(prefix) is not None
    if offline and script_named(stand_in) is not None:
        return Player(f"script/{stand_in}", declared, True)
    return Player(declared, declared, False)


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
            lines.append(f"{why}: these Agents have no scripted stand-in and will fault when they run: "
                         f"{', '.join(without)}")
    return lines
