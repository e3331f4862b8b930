"""Who drives a run: its lease (owner, expiry) on the Run row, taken with a compare-and-set, renewed, handed back
and claimed; and a run marked drifted, which nobody drives."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from engine.models import Run

__all__ = ["live_run_ids", "take_lease", "renew_leases", "release_leases", "claim_runs", "mark_drifted"]


def live_run_ids() -> list[tuple[str, str]]:
    """(id, workflow) of every run that is running or waiting, oldest first (an imported run is never hosted)."""
    return list(
        Run.objects.filter(status__in=Run.LIVE, imported_from="").order_by("created_at").values_list("id", "workflow")
    )


def take_lease(run_id: str, owner: str, seconds: float) -> bool:
    """Compare-and-set: the run becomes `owner`'s if nobody holds it, its lease expired, or `owner` holds it."""
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_expires__lt=now) | Q(lease_owner=owner)
    return (
        Run.objects.filter(free, id=run_id).update(lease_owner=owner, lease_expires=now + dt.timedelta(seconds=seconds))
        == 1
    )


def renew_leases(owner: str, run_ids: Iterable[str], seconds: float) -> set[str]:
    """Extend `owner`'s leases; returns the ids it still holds (a lost lease means another host took the run)."""
    ids = list(run_ids)
    if not ids:
        return set()
    Run.objects.filter(id__in=ids, lease_owner=owner).update(
        lease_expires=timezone.now() + dt.timedelta(seconds=seconds)
    )
    return set(Run.objects.filter(id__in=ids, lease_owner=owner).values_list("id", flat=True))


def release_leases(owner: str, run_ids: Iterable[str]) -> None:
    Run.objects.filter(id__in=list(run_ids), lease_owner=owner).update(lease_owner="", lease_expires=None)


def claim_runs(owner: str, seconds: float, limit: int, mine: bool = False) -> list[Run]:
    """Take up to `limit` live runs nobody holds (new, handed back, or whose holder's lease expired), oldest first;
    with `mine`, also those `owner` held (a host restarted under the same id takes its own runs up at once): their
    rows, as leased, which is where taking them up starts (`store.take_up`). An imported run is never claimed.
    On PostgreSQL the candidates are locked with SKIP LOCKED, so workers claiming at once split the runs instead of
    queueing on the same rows, and all are leased in one compare-and-set; on SQLite (whose writers are serialised
    anyway) a run that compare-and-set did not take is left out."""
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_expires__lt=now)
    if mine:
        free |= Q(lease_owner=owner)
    with transaction.atomic():
        candidates = list(
            Run.objects.filter(free, status__in=Run.LIVE, imported_from="")
            .order_by("created_at")
            .select_for_update(skip_locked=True)[:limit]
        )
        if not candidates:
            return []
        expires = now + dt.timedelta(seconds=seconds)
        ids = [run.id for run in candidates]
        taken = Run.objects.filter(free, id__in=ids).update(lease_owner=owner, lease_expires=expires)
        if taken != len(ids):
            ours = set(
                Run.objects.filter(id__in=ids, lease_owner=owner, lease_expires=expires).values_list("id", flat=True)
            )
            candidates = [run for run in candidates if run.id in ours]
    for run in candidates:
        run.lease_owner, run.lease_expires = owner, expires
    return candidates


def mark_drifted(run_id: str, reason: str) -> None:
    Run.objects.filter(id=run_id).update(
        status=Run.Status.DRIFTED, reason=reason, lease_owner="", lease_expires=None, updated_at=timezone.now()
    )
