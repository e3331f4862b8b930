"""What the Gate inbox and the runs search read, kept beside the journal: each Gate's opening and closing (with the
event and the person that answered it), the states a run is in and passed through, the events it took, the Agents
that took Turns, and the words of its input and output.

`Indexed` is one more record a step writes (a `store.Op`), so it is committed in the step's own transaction: the
inbox and search never disagree with the run's view. It works from the view committed before the step and the
one after it, so it reads nothing back from the database.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.journal.entries import Entry, GateAnswer, Pick
from engine.models import GateAssignee, GateRecord, RunMark, RunText
from engine.runtime.store import Op, rows

__all__ = ["Indexed", "index_import", "words", "TAKEN_PICKS", "answered_gates"]

#: The outcomes of a pick that mean the Machine took its event ("unmoved" picks are journaled but took nothing).
TAKEN_PICKS = ("answered", "outstanding", "ended")


def words(value: Any) -> str:
    """The values of a JSON value as lines of text, case-folded; keys and punctuation are left out. An object's
    values come in the order of their keys, so a value read back from PostgreSQL's jsonb (which orders keys its own
    way) gives the same text as the value first written."""
    out: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, Mapping):
            for key in sorted(item):
                walk(item[key])
        elif isinstance(item, (list, tuple)):
            for inner in item:
                walk(inner)
        elif item is not None:
            out.append(str(item))

    walk(value)
    return "\n".join(out).casefold()


def taken_events(entries: Iterable[Entry]) -> set[str]:
    """The events a step's journal entries took: Gate answers, and picks the Machine took."""
    return {e.event for e in entries if isinstance(e, GateAnswer) or (isinstance(e, Pick) and e.outcome in TAKEN_PICKS)}


def answered_gates(entries: Iterable[Entry]) -> dict[str, GateAnswer]:
    """Gate id -> the last journal entry of the step that answered it."""
    return {e.gate: e for e in entries if isinstance(e, GateAnswer)}


@dataclass
class Indexed(Op):
    """A step's changes to the inbox and search records. `before` is the view committed before the step ({} for
    the run's first), `after` the one this step commits; `door` is the input when the step starts the run."""

    workflow: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    entries: list[Entry] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    first: bool = False
    door: Any = None
    output: Any = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        marks = self._states(run_id)
        marks += [_mark(run_id, RunMark.Kind.EVENT, name) for name in taken_events(self.entries)]
        marks += [_mark(run_id, RunMark.Kind.AGENT, name) for name in set(self.agents)]
        rows.insert(RunMark, marks, now, ignore=True)
        self._gates(run_id, now)
        if self.first:
            rows.insert(RunText, [{"run_id": run_id, "input": words(self.door), "output": words(self.output)}], now)
        elif self.output is not None:
            rows.update(RunText, {"output": words(self.output)}, {"run_id": run_id}, later=True)

    def _states(self, run_id: str) -> list[dict[str, Any]]:
        """Deletes the marks of the states the run left; the marks of those it entered and passed, to insert."""
        was, now = set(self.before.get("active", ())), set(self.after.get("active", ()))
        if was - now:
            rows.delete(RunMark, {"run_id": run_id, "kind": RunMark.Kind.IN}, "name", sorted(was - now), later=True)
        passed = set(self.after.get("visited", ())) - set(self.before.get("visited", ()))
        added = [_mark(run_id, RunMark.Kind.IN, name) for name in now - was]
        return added + [_mark(run_id, RunMark.Kind.PASSED, name) for name in passed]

    def _gates(self, run_id: str, now: dt.datetime) -> None:
        """Close the Gates the step closed or answered (an answered Gate that is open after the step opened
        again), then open the new ones."""
        was = {g["id"] for g in self.before.get("gates", ())}
        after = {g["id"]: g for g in self.after.get("gates", ())}
        answered = answered_gates(self.entries)
        for gate in (was - set(after)) | (set(answered) & was):
            entry = answered.get(gate)
            rows.update(
                GateRecord,
                {
                    "closed_at": now,
                    "event": entry.event if entry else "",
                    "answered_by": (entry.by or "") if entry else "",
                    "answered_door": (entry.door or "") if entry else "",
                    "claimed_by": "",
                    "claimed_until": None,
                },
                {"run_id": run_id, "gate": gate, "closed_at": None},
                later=True,
            )
        opened = (set(after) - was) | (set(answered) & set(after))
        if opened:
            rows.insert(
                GateRecord,
                [
                    {
                        "run_id": run_id,
                        "workflow": self.workflow,
                        "gate": gate,
                        "state": after[gate].get("path") or after[gate].get("state", ""),
                        "accepts": list(after[gate].get("accepts", ())),
                        "meta": after[gate].get("meta") or {},
                        "assign": after[gate].get("assign"),
                        "assigned": after[gate].get("assign") is not None,
                        "opened_at": now,
                        "due_at": _due_at(after[gate].get("due")),
                    }
                    for gate in sorted(opened)
                ],
                now,
            )
            _assignees(run_id, [gate for gate in sorted(opened) if after[gate].get("assign")])
        self._claims(run_id, set(after) - (was - set(after)))

    def _claims(self, run_id: str, open_now: set[str]) -> None:
        """The claims the step changed, on the open Gates' records."""
        was, now = self.before.get("claims") or {}, self.after.get("claims") or {}
        for gate in open_now:
            if was.get(gate) == now.get(gate):
                continue
            held = now.get(gate)
            rows.update(
                GateRecord,
                {
                    "claimed_by": held["by"] if held else "",
                    "claimed_until": dt.datetime.fromtimestamp(held["until"], tz=dt.UTC) if held else None,
                },
                {"run_id": run_id, "gate": gate, "closed_at": None},
                later=True,
            )


def _mark(run_id: str, kind: Any, name: str) -> dict[str, Any]:
    """A RunMark row to insert; `kind` is a `RunMark.Kind` (which mypy, without Django's plugin, reads as a tuple)."""
    return {"run_id": run_id, "kind": kind, "name": name}


def _due_at(ms: Any) -> dt.datetime | None:
    """A Gate's due time (ms since the epoch in the view) as the inbox sorts by it."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC) if isinstance(ms, (int, float)) else None


def _assignees(run_id: str, gates: list[str]) -> None:
    """The names each newly opened, assigned Gate is assigned to, one row each (read back by id: bulk_create
    leaves the ids unset on some databases)."""
    if not gates:
        return
    found = GateRecord.objects.filter(run_id=run_id, gate__in=gates, closed_at=None).values_list("id", "assign")
    GateAssignee.objects.bulk_create(
        GateAssignee(record_id=record_id, kind=kind, name=name)
        for record_id, assign in found
        for kind, _, name in (item.partition(":") for item in assign or ())
    )


def index_import(
    run_id: str,
    workflow: str,
    view: Mapping[str, Any],
    door: Any,
    output: Any,
    journal: Iterable[tuple[Mapping[str, Any], dt.datetime]],
    agents: Iterable[str],
    at: dt.datetime,
) -> None:
    """The search and inbox records of an imported run, written at import from what the file holds (the steps
    that wrote them ran elsewhere): the states it is in and passed, the events it took, its Agents, its words, a
    closed Gate record per Gate answer in its journal, and an open one per Gate its view still has open. `journal`
    is each entry's JSON with its time; `at` the run's last write, when its open Gates were last seen open."""
    entries = [(Entry.from_json(data), when) for data, when in journal]
    marks = [RunMark(run_id=run_id, kind=RunMark.Kind.IN, name=name) for name in set(view.get("active", ()))]
    marks += [RunMark(run_id=run_id, kind=RunMark.Kind.PASSED, name=name) for name in set(view.get("visited", ()))]
    marks += [RunMark(run_id=run_id, kind=RunMark.Kind.EVENT, name=n) for n in taken_events(e for e, _ in entries)]
    marks += [RunMark(run_id=run_id, kind=RunMark.Kind.AGENT, name=name) for name in set(agents)]
    RunMark.objects.bulk_create(marks, ignore_conflicts=True)
    RunText.objects.create(run_id=run_id, input=words(door), output=words(output))
    records = [
        GateRecord(
            run_id=run_id,
            workflow=workflow,
            gate=entry.gate,
            state="",
            opened_at=when,
            closed_at=when,
            event=entry.event,
            answered_by=entry.by or "",
            answered_door=entry.door or "",
        )
        for entry, when in entries
        if isinstance(entry, GateAnswer)
    ]
    records += [
        GateRecord(
            run_id=run_id,
            workflow=workflow,
            gate=gate["id"],
            state=gate.get("path") or gate.get("state", ""),
            accepts=list(gate.get("accepts", ())),
            meta=gate.get("meta") or {},
            assign=gate.get("assign"),
            assigned=gate.get("assign") is not None,
            opened_at=at,
            due_at=_due_at(gate.get("due")),
        )
        for gate in view.get("gates", ())
    ]
    GateRecord.objects.bulk_create(records)
    _assignees(run_id, [gate["id"] for gate in view.get("gates", ()) if gate.get("assign")])
