"""A scenario: a run written down as its inputs and what it should come to, so `jr2 test` can replay it against
the current Machine in CI (engine/core/journal/scenario_replay.py does the replay).

    workflows/notes.py
    workflows/notes.scenarios/happy.json      # one scenario per file, next to the workflow

    scenario = Scenario.from_json(data, source="workflows/notes.scenarios/happy.json")   # ScenarioError names
    scenario.journal()          # the inputs as journal entries, a `start` first     # the file and the field
    scenario.to_json()          # the file's JSON again (version 1)
    schema()                    # its JSON schema (engine/core/scenario.schema.json is this, checked by a test)

The inputs are the journal's input entries (engine/core/journal/entries.py) without what a host adds (the Turn, the
call, the player, `at`, the digest of outputs): an Agent's pick (with, optionally, the outcome it must have), a Gate's
answer, an Effect's result or error, time passing, an Agent's fault, a cancel. Step numbers are the journal's, as
`jr2 replay` says them: step 1 is the start (the door input), `inputs[0]` is step 2. The expectations say where the
run ends up after the last input: its status, its active states (dotted paths from the Machine's root, as the
Console shows them), its output, and optionally each named Agent's Allowed picks after chosen steps. Pure: no
Django, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.core.journal.entries import (
    Advance,
    Cancel,
    EffectDone,
    EffectFailed,
    Entry,
    Fault,
    GateAnswer,
    Pick,
    Start,
)

__all__ = [
    "VERSION",
    "FOLDER_SUFFIX",
    "Scenario",
    "ScenarioError",
    "Expectations",
    "AllowedAt",
    "ScenarioInput",
    "input_of",
    "schema",
    "schema_text",
]

#: The format's version; a file says `"version": 1`.
VERSION = 1
#: The folder next to a workflow's file that holds its scenarios: `notes.py` -> `notes.scenarios/`.
FOLDER_SUFFIX = ".scenarios"


class ScenarioError(ValueError):
    """A file that is not a scenario: the file and each field that is wrong, in words."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PickInput(_Strict):
    """An Agent picked an event from its Menu (as a tool call of its Turn)."""

    kind: Literal["pick"] = "pick"
    agent: str = Field(min_length=1, description="the Agent's name in the Machine")
    event: str = Field(min_length=1, description="the Menu event picked")
    params: dict[str, Any] | None = Field(default=None, description="the pick's input")
    outcome: Literal["unmoved", "answered", "outstanding", "ended"] | None = Field(
        default=None, description="the outcome the pick must have (any outcome but refused when absent)"
    )

    def entry(self) -> Entry:
        return Pick(agent=self.agent, event=self.event, params=self.params, outcome=self.outcome)


class GateInput(_Strict):
    """A person answered an open Gate."""

    kind: Literal["gate"] = "gate"
    gate: str = Field(min_length=1, description="the Gate, by its state path below the root (writing.asking)")
    event: str = Field(min_length=1, description="the event sent to it")
    params: dict[str, Any] | None = Field(default=None, description="the event's input")

    def entry(self) -> Entry:
        return GateAnswer(gate=self.gate, event=self.event, params=self.params)


class EffectDoneInput(_Strict):
    """A running Effect finished with this output."""

    kind: Literal["effect_done"] = "effect_done"
    effect: str = Field(min_length=1, description="the Effect's id in the run (effect-1, ...)")
    output: Any = None

    def entry(self) -> Entry:
        return EffectDone(effect=self.effect, output=self.output)


class EffectFailedInput(_Strict):
    """A running Effect failed with this error."""

    kind: Literal["effect_failed"] = "effect_failed"
    effect: str = Field(min_length=1, description="the Effect's id in the run (effect-1, ...)")
    error: Any = None

    def entry(self) -> Entry:
        return EffectFailed(effect=self.effect, error=self.error)


class AdvanceInput(_Strict):
    """Time passed on the run's clock: every timer due by then fired, in order."""

    kind: Literal["advance"] = "advance"
    ms: int | float = Field(ge=0, description="milliseconds")

    def entry(self) -> Entry:
        return Advance(ms=self.ms)


class FaultInput(_Strict):
    """An Agent's Turn could not go on: `agent.fault` goes into the Machine."""

    kind: Literal["fault"] = "fault"
    agent: str = Field(min_length=1)
    reason: str

    def entry(self) -> Entry:
        return Fault(agent=self.agent, reason=self.reason)


class CancelInput(_Strict):
    """The run was cancelled."""

    kind: Literal["cancel"] = "cancel"

    def entry(self) -> Entry:
        return Cancel()


ScenarioInput = Annotated[
    PickInput | GateInput | EffectDoneInput | EffectFailedInput | AdvanceInput | FaultInput | CancelInput,
    Field(discriminator="kind"),
]

_BY_ENTRY: dict[type[Entry], type[_Strict]] = {
    Pick: PickInput,
    GateAnswer: GateInput,
    EffectDone: EffectDoneInput,
    EffectFailed: EffectFailedInput,
    Advance: AdvanceInput,
    Fault: FaultInput,
    Cancel: CancelInput,
}


def input_of(entry: Entry) -> Any:
    """The scenario input a recorded journal entry holds, or None for one that is no input (a start, a fork, a
    host's mark): what saving a finished run as a scenario keeps."""
    cls = _BY_ENTRY.get(type(entry))
    if cls is None:
        return None
    names = set(cls.model_fields) - {"kind"}
    return cls(**{name: getattr(entry, name) for name in names})


class AllowedAt(_Strict):
    """An Agent's Allowed picks right after a step (an Agent with no Turn open allows nothing: [])."""

    step: int = Field(ge=1, description="the step after which to look: 1 is the start, inputs[0] is step 2")
    agent: str = Field(min_length=1)
    picks: list[str] = Field(description="the Allowed picks, in the Menu's order")


class Expectations(_Strict):
    """Where the run must end up after its last input."""

    status: Literal["active", "done", "failed", "cancelled"]
    state: list[str] = Field(description="the active states, dotted paths from the root (notes.writing.asking)")
    output: Any = Field(default=None, description="the run's output (null while it has none)")
    allowed: list[AllowedAt] = Field(default_factory=list, description="Allowed picks checked after chosen steps")


class Scenario(_Strict):
    """One scenario file, `workflows/<workflow>.scenarios/<name>.json`."""

    version: Literal[1] = Field(description="the format's version")
    workflow: str = Field(min_length=1, description="the workflow's name")
    description: str = ""
    input: Any = Field(default=None, description="the door input the run starts with")
    inputs: list[ScenarioInput] = Field(default_factory=list, description="what came into the run, in order")
    expect: Expectations

    @classmethod
    def from_json(cls, data: Any, source: str = "the scenario") -> Scenario:
        """The scenario in `data`; ScenarioError names `source` and each field that is wrong."""
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{source}: a scenario is a JSON object; got {type(data).__name__}")
        if "version" in data and data["version"] != VERSION:
            raise ScenarioError(f"{source}: version: this jr2 reads version {VERSION}; got {data['version']!r}")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            raise ScenarioError(f"{source}: " + "; ".join(_problems(err))) from err

    @classmethod
    def from_text(cls, text: str, source: str = "the scenario") -> Scenario:
        """The scenario in a file's text; ScenarioError names the line of bad JSON."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ScenarioError(f"{source}: not JSON: {err.msg} at line {err.lineno} column {err.colno}") from err
        return cls.from_json(data, source)

    def journal(self) -> list[Entry]:
        """The scenario as a run's journal: its start (the door input), then each input as its entry."""
        return [Start(input=self.input), *(item.entry() for item in self.inputs)]

    def to_json(self) -> dict[str, Any]:
        """The file's JSON: version first, each input with its kind first and without its unset optional keys."""
        data = self.model_dump(mode="json", exclude={"inputs"})
        data["inputs"] = [item.model_dump(mode="json", exclude_none=True) for item in self.inputs]
        return {key: data[key] for key in ("version", "workflow", "description", "input", "inputs", "expect")}

    def to_text(self) -> str:
        """The file as written: indented JSON with a final newline, so a diff shows what changed."""
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"


def _problems(err: ValidationError) -> list[str]:
    """Each problem as `field: what is wrong`, the field as a path (`inputs[2].agent`, naming the input's kind)."""
    out = []
    for problem in err.errors():
        loc, kind = "", ""
        for part in problem["loc"]:
            if isinstance(part, int):
                loc += f"[{part}]"
            elif part in _TAGS and loc.endswith("]") and not kind:
                kind = f" (an {part} input)" if part[0] in "aeiou" else f" (a {part} input)"
            else:
                loc += f".{part}" if loc else str(part)
        out.append(f"{loc or '(the file)'}{kind}: {problem['msg']}")
    return out


_TAGS = frozenset(cls.model_fields["kind"].default for cls in _BY_ENTRY.values())


def schema() -> dict[str, Any]:
    """The JSON schema of a scenario file (what engine/core/scenario.schema.json holds)."""
    body = Scenario.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://jr2.dev/schemas/scenario-1.json",
        **body,
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"
