"""Relayed inputs, the fleet's database inbox (engine/runtime/relay.py): a web process posts one and reads its
answer; the host holding the run answers it in the transaction of the step it caused (`InputAnswered`), or on its
own when it caused none; a sender that stops waiting withdraws it."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from engine.models import RunInput
from engine.runtime.errors import InputWithdrawn
from engine.runtime.store.ops import Op

__all__ = ["InputAnswered", "pending_inputs", "post_input", "read_input", "withdraw_input", "answer_input"]


@dataclass
class InputAnswered(Op):
    """A relayed input (engine.models.RunInput) answered, in the transaction of the step it caused."""

    input_id: int
    outcome: Any
    owner: str

    def apply(self, run_id: str, now: dt.datetime) -> None:
        if not _answer(self.input_id, self.outcome, self.owner, now):
            raise InputWithdrawn(f"input {self.input_id} of run {run_id} was withdrawn by its sender")


def _answer(input_id: int, outcome: Any, owner: str, now: dt.datetime) -> bool:
    return (
        RunInput.objects.filter(id=input_id, status=RunInput.Status.PENDING).update(
            status=RunInput.Status.ANSWERED, outcome=outcome, answered_by=owner, answered_at=now
        )
        == 1
    )


def pending_inputs(owner: str, run_ids: Iterable[str] | None = None) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(id, run, kind, args) of the inputs waiting for runs `owner` holds, in the order they were sent."""
    rows = RunInput.objects.filter(status=RunInput.Status.PENDING, run__lease_owner=owner)
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    return [
        (input_id, run_id, kind, json.loads(args))
        for input_id, run_id, kind, args in rows.order_by("id").values_list("id", "run_id", "kind", "args")
    ]


def post_input(run_id: str, kind: str, args: dict[str, Any]) -> int:
    return RunInput.objects.create(run_id=run_id, kind=kind, args=json.dumps(args)).id


def read_input(input_id: int) -> tuple[str, Any]:
    """(status, outcome) of a relayed input."""
    status, outcome = RunInput.objects.filter(id=input_id).values_list("status", "outcome").get()
    return status, outcome


def withdraw_input(input_id: int) -> bool:
    """The sender stops waiting: true if no worker had answered it (then none ever will)."""
    return (
        RunInput.objects.filter(id=input_id, status=RunInput.Status.PENDING).update(
            status=RunInput.Status.WITHDRAWN, answered_at=timezone.now()
        )
        == 1
    )


def answer_input(input_id: int, outcome: Any, owner: str) -> bool:
    """Answer a relayed input that caused no step (a seat's pick handed to its Turn, a run that had ended)."""
    return _answer(input_id, outcome, owner, timezone.now())
