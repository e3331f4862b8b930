"""A step's one transaction: its journal entries, the Run's new state, its records and maybe a snapshot, written
all or nothing, and only while the writing host still holds the run's lease (fencing)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.core.journal.entries import Entry
from engine.models import JournalEntry, Run, RunSnapshot
from engine.runtime.errors import LeaseLost
from engine.runtime.store import rows
from engine.runtime.store.ops import Op, folded, forget_uncommitted

__all__ = ["Step", "commit", "write", "commit_group", "GROUPED"]


@dataclass
class Step:
    """What one step of a run writes. `create` holds the Run's first fields when the step starts the run;
    otherwise `owner` is the host that must still hold the run's lease for the step to be written (fencing), and
    `release` hands the lease back with it when the step ends the run."""

    run_id: str
    first_seq: int
    entries: list[Entry] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)
    snapshot: dict[str, Any] | None = None
    ops: list[Op] = field(default_factory=list)
    create: dict[str, Any] | None = None
    lease: tuple[str, float] | None = None
    owner: str | None = None
    #: The step ends the run: its lease is handed back in the same UPDATE (no host needs an ended run).
    release: bool = False

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.entries) - 1


def commit(step: Step) -> dt.datetime:
    """Write a step: journal entries, the Run's new state, its records and maybe a snapshot, all or nothing. Returns
    the commit's time, which is the Run row's `updated_at` after it (what a live page keys its view on)."""
    try:
        with transaction.atomic(), rows.batched():
            return _write_step(step)
    finally:
        forget_uncommitted()


def _write_step(step: Step) -> dt.datetime:
    now = timezone.now()
    if step.create is not None:
        owner, seconds = step.lease or ("", 0.0)
        row = {
            "id": step.run_id,
            "seq": step.last_seq,
            "lease_owner": owner,
            "lease_expires": now + dt.timedelta(seconds=seconds) if owner else None,
            **step.create,
            **step.run,
        }
        rows.insert(Run, [row], now)  # `created_at` and `updated_at` are the step's time
    elif step.run or step.entries:
        fields = dict(step.run)
        if step.entries:
            fields["seq"] = step.last_seq
        if step.release:
            fields.update(lease_owner="", lease_expires=None)
        lease = _lease(step.run_id, step.owner)
        rows.update(Run, {"updated_at": now, **fields}, lease, later=True, must=_lost(step.run_id, step.owner))
    rows.insert(
        JournalEntry,
        [
            {
                "run_id": step.run_id,
                "seq": step.first_seq + i,
                "kind": entry.kind,
                "entry": entry.to_json(),
                "out": getattr(entry, "out", None) or "",
                "at": now,
            }
            for i, entry in enumerate(step.entries)
        ],
        now,
    )
    for op in folded(step.ops):
        op.apply(step.run_id, now)
    if step.snapshot is not None:
        rows.insert(RunSnapshot, [{"run_id": step.run_id, "seq": step.last_seq, "data": step.snapshot}], now)
    return now


def write(run_id: str, ops: Iterable[Op], owner: str | None = None) -> dt.datetime:
    """Records that change nothing in the run's Session (a model call, a refusal of a malformed tool call). The Run
    row's `updated_at` moves too, so a live page knows its view is older."""
    try:
        with transaction.atomic(), rows.batched():
            return _write_records(run_id, ops, owner)
    finally:
        forget_uncommitted()


def _write_records(run_id: str, ops: Iterable[Op], owner: str | None = None) -> dt.datetime:
    now = timezone.now()
    rows.update(Run, {"updated_at": now}, _lease(run_id, owner), later=True, must=_lost(run_id, owner))
    for op in folded(ops):
        op.apply(run_id, now)
    return now


#: What `commit_group` writes together: each function's body outside its own transaction.
GROUPED: dict[Callable[..., dt.datetime], Callable[..., dt.datetime]] = {commit: _write_step, write: _write_records}


def commit_group(calls: Sequence[tuple[Callable[..., dt.datetime], tuple[Any, ...]]]) -> list[dt.datetime | Exception]:
    """Group commit: the steps and records of several runs (`commit` and `write` calls, in order) in ONE
    transaction, so a host with many runs moving at once pays one transaction (one WAL commit, one round trip and
    fsync on PostgreSQL) and one INSERT per table (`rows.batched`) for all of them. Each step keeps its own
    fencing: when one fails (its lease lost, an input already settled, a database error), the group's transaction
    is rolled back whole and each call is made again alone, so the others are written and only that one fails, as
    it would have by itself. Nothing is returned (so nobody is told) before the transaction that wrote a call has
    committed. Returns each call's time, or its exception."""
    if len(calls) > 1:
        try:
            with transaction.atomic(), rows.batched(group=True):
                return [GROUPED[fn](*args) for fn, args in calls]
        except Exception:
            pass  # nothing of the group was written: each call again, alone
        finally:
            forget_uncommitted()
    out: list[dt.datetime | Exception] = []
    for fn, args in calls:
        try:
            out.append(fn(*args))
        except Exception as err:
            out.append(err)
    return out


def _lease(run_id: str, owner: str | None) -> dict[str, str]:
    """The Run row, as long as `owner` (when given) still holds its lease (fencing)."""
    return {"id": run_id} if owner is None else {"id": run_id, "lease_owner": owner}


def _lost(run_id: str, owner: str | None) -> Callable[[], LeaseLost]:
    """The error of a step whose host no longer holds the run's lease (its fenced UPDATE matched no row)."""
    return lambda: LeaseLost(f"run {run_id}: host {owner} no longer holds its lease; nothing of this step was written")
