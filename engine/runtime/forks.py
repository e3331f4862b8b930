"""The database side of a fork: what it reads of the parent run, and the one transaction that writes the new run.

A fork is taken up the way a restarted host takes a run up (`store.load_resume`): its first journal entry (`fork`,
carrying the Session it starts from) and a snapshot of that Session, and the Turns the parent had by that step
with their conversations as they were committed by then (a message written with a later step is not copied), so
an open Turn goes on from its recorded conversation and an outstanding pick still waits for its answer. A Turn the
fork restarts (`plan.restarted`) gets a fresh conversation instead, opened by its rebuilt prompt, as a new Turn is:
the model reads nothing of the old one. Model
calls, Effects and seats are not copied: they were the parent's. The parent's rows are only read.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.core.journal.forking import ForkPlan
from engine.core.journal.trace import typed
from engine.core.prompts import user_message
from engine.models import JournalEntry, Run, RunSnapshot, TurnMessage, TurnRecord
from engine.runtime.index import Indexed

__all__ = ["ForkSource", "load_source", "commit_fork"]


@dataclass
class ForkSource:
    """The parent as a fork reads it: its row, its journal up to the step, and its Turns and messages committed by
    then."""

    run: Run
    journal: list[dict[str, Any]]
    turns: list[TurnRecord] = field(default_factory=list)
    messages: list[TurnMessage] = field(default_factory=list)
    cut: dt.datetime | None = None


def load_source(run_id: str, step: int) -> ForkSource | None:
    """None when there is no such run."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        return None
    journal = [
        {"seq": seq, "entry": entry}
        for seq, entry in JournalEntry.objects.filter(run=run, seq__lte=step)
        .order_by("seq")
        .values_list("seq", "entry")
    ]
    cut = JournalEntry.objects.filter(run=run, seq=step + 1).values_list("at", flat=True).first()
    turns = TurnRecord.objects.filter(run=run)
    messages = TurnMessage.objects.filter(run=run).select_related("turn")
    if cut is not None:
        turns = turns.filter(started_at__lt=cut)
        messages = messages.filter(created_at__lt=cut)
    return ForkSource(
        run, journal, list(turns.order_by("started_at", "id")), list(messages.order_by("conversation", "seq")), cut
    )


def commit_fork(
    run_id: str,
    source: ForkSource,
    plan: ForkPlan,
    fields: dict[str, Any],
    user_id: int | None,
    lease: tuple[str, float] | None,
) -> dt.datetime:
    """Write the fork, all or nothing: its Run row (with its parent and step, held by `lease`'s owner, or by
    nobody for a worker to claim), its `fork` entry and first snapshot, and copies of the parent's Turns and
    messages as they were at the step. Returns the commit's time."""
    now = timezone.now()
    parent = source.run
    owner, seconds = lease or ("", 0.0)
    open_turns = {turn.id for turn in plan.session.turns}
    with transaction.atomic():
        Run.objects.create(
            id=run_id,
            workflow=parent.workflow,
            digest=parent.digest,
            input=parent.input,
            scripted=parent.scripted,
            started_by_id=user_id,
            parent=parent,
            parent_step=plan.entry.step,
            seq=1,
            lease_owner=owner,
            lease_expires=now + dt.timedelta(seconds=seconds) if owner else None,
            **fields,
        )
        Run.objects.filter(id=run_id).update(updated_at=now)
        JournalEntry.objects.create(run_id=run_id, seq=1, kind="fork", entry=plan.entry.to_json(), out="", at=now)
        RunSnapshot.objects.create(run_id=run_id, seq=1, data=plan.entry.session)
        rows: dict[int, int] = {}
        for record in source.turns:
            still_open = record.turn in open_turns
            fresh = still_open and record.turn in plan.restarted
            copy = TurnRecord.objects.create(
                run_id=run_id,
                turn=record.turn,
                agent=record.agent,
                state=record.state,
                model=record.model,
                declared_model=record.declared_model,
                scripted=record.scripted,
                dials=record.dials,
                conversation=f"{record.conversation}~restart" if fresh else record.conversation,
                prompt=plan.restarted[record.turn] if fresh else record.prompt,
                system=record.system,
                status=TurnRecord.Status.OPEN if still_open else record.status,
                reason="" if still_open else record.reason,
                pending_call=plan.pending.get(record.turn, ""),
                started_at=record.started_at,
                ended_at=None if still_open else record.ended_at,
            )
            if fresh:
                _open_conversation(copy, plan)
            else:
                rows[record.pk] = copy.pk
        TurnMessage.objects.bulk_create(
            TurnMessage(
                run_id=run_id,
                turn_id=rows[m.turn_id],
                conversation=m.conversation,
                seq=m.seq,
                role=m.role,
                kind=m.kind,
                content=m.content,
            )
            for m in source.messages
            if m.turn_id in rows
        )
        # The inbox and search records of the fork as it starts: its open Gates, states, the events and Agents of
        # the history it shares with its parent, its input.
        Indexed(
            parent.workflow,
            {},
            fields.get("view") or {},
            [typed(item["entry"]) for item in source.journal],
            agents=[record.agent for record in source.turns],
            first=True,
            door=parent.input,
            output=fields.get("output"),
        ).apply(run_id, now)
    return now


def _open_conversation(record: TurnRecord, plan: ForkPlan) -> None:
    """A restarted Turn's first message: its rebuilt prompt, then the Allowed picks, as a new Turn begins."""
    turn = next(t for t in plan.session.turns if t.id == record.turn)
    text = user_message(turn.prompt, plan.session.allowed_picks(turn.agent), turn.notices)
    TurnMessage.objects.create(
        run_id=record.run_id,
        turn=record,
        conversation=record.conversation,
        seq=1,
        role="user",
        kind="prompt",
        content=[{"type": "text", "text": text}],
    )
