"""A run as one JSON file, for audits and bug reports: `export_run` writes it, `import_run` reads it into another
instance as a read-only run.

    data = export_run("ab12cd34ef")          # {"format": "jr2.run", "version": 1, "run", "journal", "snapshots",
                                             #  "turns", "messages", "model_calls", "effects", ...}
    run = import_run(data)                   # the new Run row, marked imported; ExchangeError for a bad file
    schema()                                 # the format's JSON schema (`jr2 export --schema`)

The format is versioned (`version`); its schema is the pydantic models below, which also validate an import, so
a file with a missing, mistyped or unknown field is refused naming it, and so is one whose parts do not fit
together (journal seqs with a gap, a message of an unknown Turn). An import happens in one transaction: a file
refused halfway changes nothing. The run keeps its id when it is free here (else it gets a new one), remembers
the id it had (`imported_from`), keeps the status it was exported with, and is never hosted, resumed, answered
or cancelled.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine import __version__
from engine.core.text import NUL_REFUSED, nul_at
from engine.core.words import validation_lines
from engine.models import (
    ID_ALPHABET,
    EffectRecord,
    JournalEntry,
    ModelCall,
    Run,
    RunSnapshot,
    TurnMessage,
    TurnRecord,
    new_run_id,
)
from engine.runtime.index import index_import

__all__ = ["FORMAT", "VERSION", "RunExport", "ExchangeError", "export_run", "import_run", "schema"]

FORMAT = "jr2.run"
VERSION = 1

RunStatus = Literal["running", "waiting", "done", "failed", "cancelled", "drifted"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunPart(_Part):
    id: str = Field(pattern=f"^[{ID_ALPHABET}]{{1,16}}$", description="the run's id where it was exported")
    workflow: str = Field(min_length=1, max_length=200)
    digest: str = Field(max_length=64, description="the Machine's shape digest when the run was written")
    status: RunStatus
    input: Any = None
    output: Any = None
    reason: str = ""
    view: dict[str, Any] = Field(default_factory=dict, description="state value, context, open Gates, Turns")
    seq: int = Field(ge=1, description="the last journal entry's seq")
    scripted: bool = False
    parent: str | None = None
    parent_step: int | None = Field(default=None, ge=1)
    imported_from: str = ""
    created_at: dt.datetime
    updated_at: dt.datetime


class JournalPart(_Part):
    seq: int = Field(ge=1)
    kind: str = Field(min_length=1, max_length=32)
    entry: dict[str, Any]
    out: str = Field(default="", max_length=32)
    at: dt.datetime


class SnapshotPart(_Part):
    seq: int = Field(ge=1)
    data: dict[str, Any] = Field(description="Session.to_json() after journal entry `seq`")


class TurnPart(_Part):
    turn: str = Field(min_length=1, max_length=120)
    agent: str = Field(max_length=120)
    state: str = Field(max_length=300)
    model: str = Field(max_length=200)
    declared_model: str = Field(max_length=200)
    scripted: bool = False
    dials: dict[str, Any] = Field(default_factory=dict)
    conversation: str = Field(max_length=160)
    prompt: str = ""
    system: str = ""
    status: Literal["open", "ended", "faulted"]
    reason: str = ""
    pending_call: str = Field(default="", max_length=120)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    started_at: dt.datetime
    ended_at: dt.datetime | None = None


class MessagePart(_Part):
    turn: str = Field(description="the Turn id it belongs to")
    conversation: str = Field(max_length=160)
    seq: int = Field(ge=1)
    role: str = Field(max_length=16)
    kind: str = Field(max_length=32)
    content: list[dict[str, Any]]
    created_at: dt.datetime


class CallPart(_Part):
    turn: str
    seq: int = Field(ge=1)
    model: str = Field(max_length=200)
    scripted: bool = False
    status: Literal["in_flight", "done", "failed", "interrupted"]
    request: dict[str, Any]
    messages: int = Field(ge=0)
    response: dict[str, Any] | None = None
    tool_calls: list[Any] = Field(default_factory=list)
    stop_reason: str = Field(default="", max_length=40)
    error: str = ""
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    latency_ms: float | None = None
    started_at: dt.datetime
    finished_at: dt.datetime | None = None


class EffectPart(_Part):
    effect: str = Field(min_length=1, max_length=120)
    slot: str = Field(max_length=120)
    kind: str = Field(max_length=16)
    state: str = Field(max_length=300)
    spec: dict[str, Any] = Field(default_factory=dict)
    input: Any = None
    idempotent: bool = False
    status: Literal["requested", "started", "done", "failed", "cancelled"]
    attempts: int = Field(default=0, ge=0)
    result: Any = None
    duration_ms: float | None = None
    requested_at: dt.datetime
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None


class RunExport(_Part):
    """One run, whole: its row, journal, snapshots, Turns with their messages and model calls, and Effects."""

    format: Literal["jr2.run"]
    version: Literal[1]
    exported_at: dt.datetime
    engine: str = Field(description="the jr2 version that exported it")
    run: RunPart
    journal: list[JournalPart] = Field(min_length=1)
    snapshots: list[SnapshotPart] = Field(default_factory=list)
    turns: list[TurnPart] = Field(default_factory=list)
    messages: list[MessagePart] = Field(default_factory=list)
    model_calls: list[CallPart] = Field(default_factory=list)
    effects: list[EffectPart] = Field(default_factory=list)


class ExchangeError(ValueError):
    """A file that is not a run export this instance can read; `errors` has one line per problem."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


def schema() -> dict[str, Any]:
    return RunExport.model_json_schema()


# -- export -------------------------------------------------------------------------------------------------------


def export_run(run_id: str) -> dict[str, Any]:
    """The run as plain JSON (`RunExport`); LookupError when there is no such run."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise LookupError(f"no run {run_id}")
    turns = {t.pk: t.turn for t in TurnRecord.objects.filter(run=run)}
    data = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": timezone.now(),
        "engine": __version__,
        "run": {
            "id": run.id,
            "workflow": run.workflow,
            "digest": run.digest,
            "status": run.status,
            "input": run.input,
            "output": run.output,
            "reason": run.reason,
            "view": run.view,
            "seq": run.seq,
            "scripted": run.scripted,
            "parent": run.parent_id,
            "parent_step": run.parent_step,
            "imported_from": run.imported_from,
            "created_at": run.created_at,
            "updated_at": run.updated_at,
        },
        "journal": list(
            JournalEntry.objects.filter(run=run).order_by("seq").values("seq", "kind", "entry", "out", "at")
        ),
        "snapshots": list(RunSnapshot.objects.filter(run=run).order_by("seq").values("seq", "data")),
        "turns": list(
            TurnRecord.objects.filter(run=run)
            .order_by("started_at", "id")
            .values(*(name for name in TurnPart.model_fields))
        ),
        "messages": [
            {"turn": turns[m.pop("turn_id")], **m}
            for m in TurnMessage.objects.filter(run=run)
            .order_by("conversation", "seq")
            .values("turn_id", *(n for n in MessagePart.model_fields if n != "turn"))
        ],
        "model_calls": [
            {"turn": turns[c.pop("turn_id")], **c}
            for c in ModelCall.objects.filter(run=run)
            .order_by("seq")
            .values("turn_id", *(n for n in CallPart.model_fields if n != "turn"))
        ],
        "effects": list(
            EffectRecord.objects.filter(run=run)
            .order_by("requested_at", "id")
            .values(*(name for name in EffectPart.model_fields))
        ),
    }
    return RunExport.model_validate(data).model_dump(mode="json")


# -- import -------------------------------------------------------------------------------------------------------


def import_run(data: Any, user_id: int | None = None) -> Run:
    """Read an export into this instance, read-only, in one transaction (see the module docstring)."""
    export = validate(data)
    original = export.run
    with transaction.atomic():
        run_id = original.id if not Run.objects.filter(id=original.id).exists() else new_run_id()
        parent = original.parent if original.parent and Run.objects.filter(id=original.parent).exists() else None
        Run.objects.create(
            id=run_id,
            workflow=original.workflow,
            digest=original.digest,
            status=original.status,
            input=original.input,
            output=original.output,
            reason=original.reason,
            view=original.view,
            seq=original.seq,
            scripted=original.scripted,
            parent_id=parent,
            parent_step=original.parent_step,
            imported_from=original.imported_from or original.id,
            started_by_id=user_id,
        )
        Run.objects.filter(id=run_id).update(created_at=original.created_at, updated_at=original.updated_at)
        JournalEntry.objects.bulk_create(JournalEntry(run_id=run_id, **e.model_dump()) for e in export.journal)
        RunSnapshot.objects.bulk_create(RunSnapshot(run_id=run_id, **s.model_dump()) for s in export.snapshots)
        rows = {t.turn: TurnRecord.objects.create(run_id=run_id, **t.model_dump()).pk for t in export.turns}
        messages = TurnMessage.objects.bulk_create(
            TurnMessage(run_id=run_id, turn_id=rows[m.turn], **m.model_dump(exclude={"turn"})) for m in export.messages
        )
        for made, part in zip(messages, export.messages):
            made.created_at = part.created_at
        TurnMessage.objects.bulk_update(messages, ["created_at"])
        ModelCall.objects.bulk_create(
            ModelCall(run_id=run_id, turn_id=rows[c.turn], **c.model_dump(exclude={"turn"})) for c in export.model_calls
        )
        EffectRecord.objects.bulk_create(EffectRecord(run_id=run_id, **e.model_dump()) for e in export.effects)
        index_import(
            run_id,
            original.workflow,
            original.view or {},
            original.input,
            original.output,
            [(e.entry, e.at) for e in export.journal],
            [t.agent for t in export.turns],
            original.updated_at,
        )
    return Run.objects.get(id=run_id)


def validate(data: Any) -> RunExport:
    """The file as a `RunExport`, or ExchangeError naming every problem (field by field, then how the parts fit)."""
    if not isinstance(data, dict):
        raise ExchangeError(f"a run export is a JSON object; got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise ExchangeError(f'not a jr2 run export: "format" must be "{FORMAT}"; got {data.get("format")!r}')
    if data.get("version") != VERSION:
        raise ExchangeError(
            f"this instance reads run exports of version {VERSION}; the file is version {data.get('version')!r}"
        )
    nul = nul_at(data)
    if nul is not None:
        raise _refused([f"{'.'.join(map(str, nul))}: {NUL_REFUSED}"])
    try:
        export = RunExport.model_validate(data)
    except ValidationError as err:
        errors = validation_lines(err, "(file)")
        raise _refused(errors) from err
    errors = _misfits(export)
    if errors:
        raise _refused(errors)
    return export


def _refused(errors: list[str]) -> ExchangeError:
    shown = errors[:10] + ([f"and {len(errors) - 10} more"] if len(errors) > 10 else [])
    return ExchangeError("the run export is refused, nothing was imported: " + "; ".join(shown), errors)


def _misfits(export: RunExport) -> list[str]:
    errors = []
    seqs = [e.seq for e in export.journal]
    if seqs != list(range(1, len(seqs) + 1)):
        gap = next(i for i, s in enumerate(seqs, start=1) if s != i)
        errors.append(f"journal: the seqs must run 1, 2, 3… without a gap; entry {gap} has seq {seqs[gap - 1]}")
    if export.journal[0].kind not in ("start", "fork"):
        errors.append(f"journal.0.kind: a run's journal starts with 'start' or 'fork'; got {export.journal[0].kind!r}")
    if export.run.seq != seqs[-1]:
        errors.append(f"run.seq: {export.run.seq} is not the last journal entry's seq ({seqs[-1]})")
    turns = Counter(t.turn for t in export.turns)
    errors.extend(f"turns: the Turn {turn} is listed {n} times" for turn, n in turns.items() if n > 1)
    for part, named in (
        ("messages", [m.turn for m in export.messages]),
        ("model_calls", [c.turn for c in export.model_calls]),
    ):
        errors.extend(f"{part}.{i}.turn: no Turn {turn} in turns" for i, turn in enumerate(named) if turn not in turns)
    for name, keys in (
        ("snapshots", [s.seq for s in export.snapshots]),
        ("messages", [(m.conversation, m.seq) for m in export.messages]),
        ("model_calls", [c.seq for c in export.model_calls]),
        ("effects", [e.effect for e in export.effects]),
    ):
        errors.extend(f"{name}: {key} is listed {n} times" for key, n in Counter(keys).items() if n > 1)
    errors.extend(
        f"snapshots: seq {s.seq} is past the journal's end ({seqs[-1]})" for s in export.snapshots if s.seq > seqs[-1]
    )
    return errors
