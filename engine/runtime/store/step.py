"""A step's one transaction: its journal entries, the Run's new state, its records and maybe a snapshot, written
all or nothing, and only while the writing host still holds the run's lease (fencing)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.core.journal.entries import Entry
from engine.models import JournalEntry, Run, RunSnapshot
from engine.runtime.errors import LeaseLost
from engine.runtime.store.ops import Op

__all__ = ["Step", "commit", "write"]


@dataclass
class Step:
    """What one step of a run writes. `create` holds the Run's first fields when the step starts the run;
    otherwise `owner` is the host that must still hold the run's lease for the step to be written (fencing)."""

    run_id: str
    first_seq: int
    entries: list[Entry] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)
    snapshot: dict[str, Any] | None = None
    ops: list[Op] = field(default_factory=list)
    create: dict[str, Any] | None = None
    lease: tuple[str, float] | None = None
    owner: str | None = None

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.entries) - 1


def commit(step: Step) -> dt.datetime:
    """Write a step: journal entries, the Run's new state, its records and maybe a snapshot, all or nothing. Returns
    the commit's time, which is the Run row's `updated_at` after it (what a live page keys its view on)."""
    now = timezone.now()
    with transaction.atomic():
        if step.create is not None:
            owner, seconds = step.lease or ("", 0.0)
            Run.objects.create(
                id=step.run_id,
                seq=step.last_seq,
                lease_owner=owner,
                lease_expires=now + dt.timedelta(seconds=seconds) if owner else None,
                **step.create,
                **step.run,
            )
            Run.objects.filter(id=step.run_id).update(updated_at=now)
        elif step.run or step.entries:
            fields = dict(step.run)
            if step.entries:
                fields["seq"] = step.last_seq
            if not _held(step.run_id, step.owner).update(updated_at=now, **fields):
                _lost(step.run_id, step.owner)
        if step.entries:
            JournalEntry.objects.bulk_create(
                JournalEntry(
                    run_id=step.run_id,
                    seq=step.first_seq + i,
                    kind=entry.kind,
                    entry=entry.to_json(),
                    out=getattr(entry, "out", None) or "",
                    at=now,
                )
                for i, entry in enumerate(step.entries)
            )
        for op in step.ops:
            op.apply(step.run_id, now)
        if step.snapshot is not None:
            RunSnapshot.objects.create(run_id=step.run_id, seq=step.last_seq, data=step.snapshot)
    return now


def write(run_id: str, ops: Iterable[Op], owner: str | None = None) -> dt.datetime:
    """Records that change nothing in the run's Session (a model call, a refusal of a malformed tool call). The Run
    row's `updated_at` moves too, so a live page knows its view is older."""
    now = timezone.now()
    with transaction.atomic():
        if not _held(run_id, owner).update(updated_at=now):
            _lost(run_id, owner)
        for op in ops:
            op.apply(run_id, now)
    return now


def _held(run_id: str, owner: str | None) -> Any:
    """The Run row, as long as `owner` (when given) still holds its lease."""
    rows = Run.objects.filter(id=run_id)
    return rows if owner is None else rows.filter(lease_owner=owner)


def _lost(run_id: str, owner: str | None) -> None:
    raise LeaseLost(f"run {run_id}: host {owner} no longer holds its lease; nothing of this step was written")
