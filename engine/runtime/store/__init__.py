"""The database side of the runtime: every write of a run's step in one transaction, and what a resume reads.

These are plain synchronous functions over the Django ORM. The host calls them on its one database thread
(`Host.db`), so a run's writes are committed in the order its task made them, and no database connection is held
while a model is called.

Journal first, then tell: `commit(step)` writes the step's journal entries, the Run's new state and every record
that follows from them (Turns, messages, Effects, a snapshot) in one `transaction.atomic()`; only after it returns
does the host tell anyone.

    ops.py      the records a step writes beside its entries (`Op`: a Turn opened, a message, a model call, ...)
    step.py     the step's one transaction (`commit`, `write`), fenced by the run's lease; several runs' steps
                in one (`commit_group`, the host's group commit: engine/runtime/dbthread.py)
    resume.py   what taking a run up again reads (`load_resume`), and does (`take_up`, `take_up_claimed`)
    leases.py   who drives a run: taking, renewing, handing back and claiming leases; drifted runs
    inputs.py   inputs people send, kept until delivered or refused (the fleet's database inbox)

Callers use this package's names (`from engine.runtime import store; store.commit(...)`).
"""

from __future__ import annotations

from engine.runtime.errors import InputSettled, LeaseLost
from engine.runtime.store.inputs import (
    InputAnswered,
    InputReport,
    PendingRefused,
    answer_input,
    pending_inputs,
    post_input,
    read_input,
    report,
    reports,
)
from engine.runtime.store.leases import (
    claim_runs,
    live_run_ids,
    mark_drifted,
    release_leases,
    renew_leases,
    take_lease,
)
from engine.runtime.store.ops import (
    CallFinished,
    CallStarted,
    EffectChanged,
    EffectOpened,
    Message,
    Op,
    SeatChanged,
    TurnChanged,
    TurnClosed,
    TurnOpened,
    read_once,
)
from engine.runtime.store.resume import Resume, TakeUp, expire_in_flight, load_resume, take_up, take_up_claimed
from engine.runtime.store.step import GROUPED, Step, commit, commit_group, write

__all__ = [
    "Step",
    "Op",
    "TurnOpened",
    "TurnClosed",
    "TurnChanged",
    "SeatChanged",
    "Message",
    "CallStarted",
    "CallFinished",
    "EffectOpened",
    "EffectChanged",
    "commit",
    "write",
    "commit_group",
    "GROUPED",
    "Resume",
    "load_resume",
    "take_up",
    "take_up_claimed",
    "TakeUp",
    "take_lease",
    "renew_leases",
    "release_leases",
    "live_run_ids",
    "mark_drifted",
    "expire_in_flight",
    "LeaseLost",
    "InputSettled",
    "InputAnswered",
    "InputReport",
    "PendingRefused",
    "read_once",
    "claim_runs",
    "pending_inputs",
    "post_input",
    "read_input",
    "report",
    "reports",
    "answer_input",
]
