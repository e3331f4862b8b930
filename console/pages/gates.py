"""The open Gates across all runs, as the Gate inbox shows them, and answering several at once.

The inbox reads `GateRecord`s (engine/runtime/index.py writes them with each step): one per opening of a Gate, so a
person answers the question they read. An answer names the record; if that opening has closed meanwhile (another
person answered it, the run moved on or ended), nothing is delivered and the inbox says who answered it.

A rejecting event (its name starts with reject, deny, decline, refuse or withdraw) takes its reason as part of its
own input: a `reason` field of the event's model, put first on its form (the `r` key goes there). An event named so
without a `reason` field is marked on its form, so the workflow's author can add one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import F, QuerySet
from django.utils import timezone

from console.pages.assigned import Answerer, GateWho, answerable, gate_who, mine
from console.pages.chain import chain_of
from console.pages.forms import SchemaForm, check, schema_form
from console.pages.links import query_with
from console.pages.runview import machine_of
from engine.models import GateRecord, Run
from engine.runtime.errors import InputPending, NoHost
from engine.runtime.store.inputs import KEPT, InputReport, pending_gate_inputs
from engine.web.answering import answer_refusal
from engine.web.hosting import ready_host

__all__ = [
    "InboxItem",
    "EventForm",
    "open_gates",
    "open_count",
    "inbox_items",
    "item_for",
    "rejecting",
    "inbox_query",
    "Result",
    "Outcome",
    "Batch",
    "check_batch",
    "answer_many",
    "closed",
    "ORDERS",
    "MAX_BATCH",
    "SHOWN",
]

ORDERS = ("oldest", "newest", "due")
REJECTING = ("reject", "deny", "decline", "refuse", "withdraw")
MAX_BATCH = 100
SHOWN = 200


def rejecting(event: str) -> bool:
    return event.lower().startswith(REJECTING)


@dataclass
class EventForm:
    event: str
    description: str
    form: SchemaForm
    rejecting: bool
    has_reason: bool


@dataclass
class InboxItem:
    record: GateRecord
    forms: list[EventForm] = field(default_factory=list)
    who: GateWho | None = None
    chain: list[str] = field(default_factory=list)
    #: Answers to this Gate that are kept but not delivered yet (no worker holds its run): the card says so.
    waiting: list[InputReport] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """Gates of one kind (same workflow, same Gate) take the same events: they can be answered together."""
        return f"{self.record.workflow} {self.record.gate}"


def open_gates(
    workflow: str = "", gate: str = "", order: str = "oldest", who: str = "", answerer: Answerer | None = None
) -> QuerySet[GateRecord]:
    rows = GateRecord.objects.filter(closed_at=None, run__status__in=Run.LIVE, run__imported_from="")
    if who and answerer is not None:
        rows = mine(rows, answerer, who)
    if workflow:
        rows = rows.filter(workflow=workflow)
    if gate:
        rows = rows.filter(gate=gate)
    if order == "due":  # the soonest due first; Gates with no timer after them, oldest first
        return rows.order_by(F("due_at").asc(nulls_last=True), "opened_at", "id")
    return rows.order_by("-opened_at" if order == "newest" else "opened_at", "id")


def open_count(answerer: Answerer | None = None) -> int:
    """The header's count: the open Gates this person may answer (all open Gates without a person)."""
    rows = open_gates()
    return (answerable(rows, answerer) if answerer is not None else rows).count()


def inbox_query(filters: Mapping[str, str]) -> str:
    """The inbox's filters as its query string (the default order left out), for the links and forms on it."""
    order = filters.get("order", "")
    return query_with(
        workflow=filters.get("workflow") or None,
        gate=filters.get("gate") or None,
        who=filters.get("who") or None,
        order=None if order in ("", "oldest") else order,
    )


def event_forms(record: GateRecord, data: Any = None, only: str = "") -> list[EventForm]:
    """A form per event the Gate accepts (bound to `data` for the event `only`); a rejecting event's `reason`
    goes first."""
    machine = machine_of(record.workflow)
    out = []
    for name in record.accepts:
        if only and name != only:
            continue
        event = machine.gate_event(record.gate, name) if machine is not None else None
        form = schema_form(
            event.input if event else None, data if name == only else None, auto_id=f"id_inbox_{record.pk}_{name}_%s"
        )
        has_reason = "reason" in form.fields
        if has_reason and rejecting(name):
            form.fields = {"reason": form.fields.pop("reason"), **form.fields}
        out.append(EventForm(name, (event.description or "") if event else "", form, rejecting(name), has_reason))
    return out


def item_for(
    record: GateRecord,
    answering: bool,
    answerer: Answerer | None = None,
    waiting: list[InputReport] | None = None,
) -> InboxItem:
    """An open Gate's card: its forms only for someone who may answer it now (console/pages/assigned.py), and the
    answers kept for it but not delivered yet."""
    who = (
        gate_who(answerer, record.assign if record.assigned else None, record.claimed_by, record.claimed_until)
        if answerer is not None and record.closed_at is None
        else None
    )
    may = answering and (who is None or who.may_answer)
    if waiting is None:
        waiting = pending_answers([record]).get((record.run_id, record.gate), [])
    return InboxItem(record, event_forms(record) if may else [], who, chain_of(record.run_id) if who else [], waiting)


def inbox_items(rows: Iterable[GateRecord], answering: bool, answerer: Answerer | None = None) -> list[InboxItem]:
    records = list(rows)
    waiting = pending_answers(records)
    return [item_for(record, answering, answerer, waiting.get((record.run_id, record.gate), [])) for record in records]


def pending_answers(records: Iterable[GateRecord]) -> dict[tuple[str, str], list[InputReport]]:
    """The answers kept for these Gates and not delivered yet, by (run, Gate): one query for the whole inbox."""
    found: dict[tuple[str, str], list[InputReport]] = {}
    for report in pending_gate_inputs({record.run_id for record in records}):
        found.setdefault((report.run, report.gate), []).append(report)
    return found


class Result(StrEnum):
    """What became of one Gate of a batch."""

    DELIVERED = "delivered"
    PENDING = "pending"  # kept: delivered, in order, when a worker holds the run
    CLOSED = "closed"  # answered elsewhere, or the run moved on
    REFUSED = "refused"  # in the engine's words


@dataclass
class Outcome:
    record: GateRecord
    result: Result
    detail: str = ""


@dataclass
class Batch:
    """A checked batch: its records and the event's form (with errors when the input is wrong)."""

    records: list[GateRecord]
    event: str
    form: SchemaForm | None
    values: dict[str, Any] | None
    error: str = ""


def check_batch(ids: list[str], event: str, data: Any) -> Batch:
    """The Gates named by `ids` (record ids, all of one kind) and the input for `event`, checked by the event's own
    model. Any error means nothing is delivered."""
    if not ids:
        return Batch([], event, None, None, "no Gate selected: pick at least one")
    if len(ids) > MAX_BATCH:
        return Batch([], event, None, None, f"at most {MAX_BATCH} Gates at once; {len(ids)} were selected")
    bad = [i for i in ids if not i.isdigit()]
    if bad:
        return Batch([], event, None, None, f'"{bad[0][:40]}" is not a Gate of the inbox')
    found = {str(r.pk): r for r in GateRecord.objects.filter(pk__in=[int(i) for i in ids])}
    missing = [i for i in ids if i not in found]
    if missing:
        return Batch([], event, None, None, f"no Gate {', '.join(missing)} in the inbox")
    records = [found[i] for i in dict.fromkeys(ids)]
    kinds = sorted({f"{r.workflow} {r.gate}" for r in records})
    if len(kinds) > 1:
        return Batch(
            records,
            event,
            None,
            None,
            "select Gates of one kind (one workflow, one Gate) to answer "
            f"them together; these are {len(kinds)}: {'; '.join(kinds)}",
        )
    first = records[0]
    machine = machine_of(first.workflow)
    definition = machine.gate_event(first.gate, event) if machine is not None else None
    if definition is None:
        return Batch(
            records,
            event,
            None,
            None,
            f'Gate "{first.gate}" of workflow "{first.workflow}" does not take '
            f'"{event}" (it takes: {", ".join(first.accepts) or "nothing"})',
        )
    form = next(f.form for f in event_forms(first, data, only=event))
    return Batch(records, event, form, check(form, definition.input))


async def answer_many(batch: Batch, user: Any) -> list[Outcome]:
    """Deliver the batch's answer to each of its Gates on its own, each through the host as one answer would, each
    held to its assignment and claim (engine/web/answering.py)."""
    try:
        host = await ready_host()
    except NoHost as err:
        return [Outcome(r, Result.REFUSED, str(err)) for r in batch.records]
    return list(await asyncio.gather(*(_deliver(host, record, batch, user) for record in batch.records)))


async def _deliver(host: Any, record: GateRecord, batch: Batch, user: Any) -> Outcome:
    fresh = await GateRecord.objects.filter(pk=record.pk).afirst()
    if fresh is None or fresh.closed_at is not None:
        return await sync_to_async(closed)(fresh or record)
    view = await Run.objects.filter(pk=record.run_id).values_list("view", flat=True).afirst()
    refused = await sync_to_async(answer_refusal)(user, view, record.gate)
    if refused is not None:
        return Outcome(record, Result.REFUSED, refused[1])
    try:
        delivery = await host.deliver(
            record.run_id,
            "gate",
            gate=record.gate,
            event=batch.event,
            params=dict(batch.values or {}),
            by=user.get_username(),
            door="console",
        )
    except InputPending as pending:
        return Outcome(record, Result.PENDING, f"kept as input {pending.input_id}: {KEPT}")
    except Exception as err:
        return Outcome(record, Result.CLOSED, f"the run is no longer live here: {err}")
    if delivery.outcome == "delivered":
        return Outcome(record, Result.DELIVERED)
    if delivery.code in ("no-gate", "ended"):
        now = await GateRecord.objects.filter(pk=record.pk).afirst()
        return await sync_to_async(closed)(now or record)
    return Outcome(record, Result.REFUSED, delivery.error or delivery.outcome)


def closed(record: GateRecord) -> Outcome:
    """A Gate that closed before this answer: who answered it, or that the run moved on."""
    if record.answered_by:
        return Outcome(record, Result.CLOSED, f"answered by {record.answered_by} with {record.event}")
    if record.event:
        return Outcome(record, Result.CLOSED, f"answered with {record.event}")
    status = Run.objects.filter(pk=record.run_id).values_list("status", flat=True).first()
    if status is not None and status not in Run.LIVE:
        return Outcome(record, Result.CLOSED, f"the run has ended ({status})")
    return Outcome(record, Result.CLOSED, "the run moved on" if record.closed_at else "it was closing")


def waited(record: GateRecord) -> float:
    return (timezone.now() - record.opened_at).total_seconds()
