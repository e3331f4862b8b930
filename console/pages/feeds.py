"""A run's history a page at a time, newest first: its steps (journal entries) and its Turns (with their lines).

A run of 10,000 steps and 2,000 Turn messages must open as fast as a small one, so no page reads or holds the whole
history: the run page shows the newest page of each (the "head", which the live consumer pushes again after each
commit), and the browser asks for older pages by cursor as the user scrolls (`steps/?before=<seq>`,
`turns/?before=<pk>`, and inside a long Turn `turns/<pk>/lines/?before=<seq>`). A cursor is exclusive; `after`
closes a range from below (a page that missed some steps asks for exactly those).

Cursors: a step is its journal `seq` (1, 2, ... with no holes); a Turn is its record's primary key (records are
made as Turns start, so keys grow with time); a line is its message's key (a Turn's messages in the order they
were written).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone

from console.pages.conversation import Line, TurnView, conversation_lines
from engine.core.journal.replay import describe
from engine.models import EffectRecord, JournalEntry, ModelCall, TurnMessage, TurnRecord

__all__ = [
    "STEP_PAGE",
    "STEP_HEAD",
    "TURN_PAGE",
    "StepView",
    "StepPage",
    "TurnItem",
    "TurnPage",
    "Summary",
    "Feeds",
    "step_page",
    "steps_around",
    "turn_page",
    "turn_lines",
    "summary",
    "head",
    "cursor",
]

STEP_PAGE = 50  # steps per page
STEP_HEAD = 10  # steps a live update carries (a page that missed more gets a loader for the gap)
CALL_FIELDS = (
    "turn_id",
    "seq",
    "status",
    "model",
    "scripted",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "stop_reason",
)  # what a line shows of a model call (not its request/response)
TURN_PAGE = 100  # messages per page of Turns (whole Turns while they fit; at least one Turn, cut if longer)


@dataclass(frozen=True)
class StepView:
    seq: int
    kind: str
    words: str
    at: Any

    @property
    def when(self) -> str:
        """The commit time in the server's zone, as the page shows it (a strftime, not the template's `date`: a
        page of steps is drawn on every live update)."""
        return timezone.localtime(self.at).strftime("%Y-%m-%d %H:%M:%S") if self.at is not None else ""


@dataclass
class StepPage:
    """Steps newest first; `older` is the cursor of the next older page (None: this page reaches step 1, or the
    range's lower end `after`)."""

    steps: list[StepView]
    older: int | None
    after: int = 0

    @property
    def prev(self) -> int:
        """The cursor of the step just older than this page's oldest (0: none), so a page can tell a gap."""
        return self.steps[-1].seq - 1 if self.steps else 0


@dataclass
class TurnItem:
    """A Turn as its card shows it: `earlier` is the seq of its first shown message when older ones are left out."""

    view: TurnView
    earlier: int | None = None
    hidden: int = 0


@dataclass
class TurnPage:
    turns: list[TurnItem]
    older: int | None
    after: int = 0
    prev: int = 0  # the key of the Turn just older than this page's oldest (0: none), so a page can tell a gap


@dataclass(frozen=True)
class Summary:
    steps: int
    turns: int
    messages: int
    model_calls: int


@dataclass
class Feeds:
    """What the run page's live regions need of the history: the summary and the head of each feed."""

    summary: Summary
    steps: StepPage
    turns: TurnPage

    @property
    def live_steps(self) -> StepPage:
        """The newest steps a live update carries: fewer than a page, since most pages have all but the last few."""
        return StepPage(self.steps.steps[:STEP_HEAD], None, self.steps.after)


def cursor(raw: str | None, name: str) -> int | None:
    """A cursor from the query string: absent is None; anything but a whole number >= 0 is a ValueError that says
    which parameter is wrong."""
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or len(raw) > 12:
        raise ValueError(f"{name} must be a whole number of 0 or more, not {raw[:40]!r}")
    return int(raw)


def summary(run_id: str, last_seq: int) -> Summary:
    """How big the run is: its steps (the last journal seq), Turns, messages and model calls (three counts on
    indexed columns, in one statement: a live page's head is read again after every commit, and building each
    count's query cost more than running it)."""
    with connection.cursor() as cursor:
        cursor.execute(_counts(), [run_id] * 3)
        turns, messages, calls = cursor.fetchone()
    return Summary(steps=last_seq, turns=int(turns), messages=int(messages), model_calls=int(calls))


def _count_of(model: type[TurnRecord] | type[TurnMessage] | type[ModelCall]) -> str:
    quote = connection.ops.quote_name
    return (
        f"(SELECT COUNT(*) FROM {quote(model._meta.db_table)} WHERE {quote(model._meta.get_field('run').column)} = %s)"
    )


@cache
def _counts() -> str:
    return "SELECT " + ", ".join(_count_of(model) for model in (TurnRecord, TurnMessage, ModelCall))


# -- steps ---------------------------------------------------------------------------------------------------------


def step_page(run_id: str, before: int | None = None, after: int = 0, limit: int = STEP_PAGE) -> StepPage:
    """The newest `limit` steps below `before` (all when None) and above `after`, said in words."""
    rows = JournalEntry.objects.filter(run_id=run_id, seq__gt=after)
    if before is not None:
        rows = rows.filter(seq__lt=before)
    found = list(rows.order_by("-seq").values_list("seq", "kind", "entry", "at")[: limit + 1])
    more = len(found) > limit
    found = found[:limit]
    effects = {str(entry.get("effect")) for _, kind, entry, _ in found if kind.startswith("effect_")}
    slots = (
        dict(EffectRecord.objects.filter(run_id=run_id, effect__in=effects).values_list("effect", "slot"))
        if effects
        else {}
    )
    steps = [StepView(seq, kind, describe(entry, slots), at) for seq, kind, entry, at in found]
    return StepPage(steps, steps[-1].seq if more and steps else None, after)


def steps_around(run_id: str, step: int, head: StepPage) -> StepPage | None:
    """The page a deep link to `step` opens besides the head: the steps around it, down from the newest one the
    head does not show (None when the head shows it already)."""
    if not head.steps or step >= head.steps[-1].seq:
        return None
    top = min(step + STEP_PAGE // 2, head.steps[-1].seq - 1)
    return step_page(run_id, before=top + 1, after=0, limit=STEP_PAGE)


# -- Turns ---------------------------------------------------------------------------------------------------------


def turn_page(run_id: str, before: int | None = None, after: int = 0, budget: int = TURN_PAGE) -> TurnPage:
    """The newest Turns below `before` and above `after` while their messages fit in `budget` (at least one Turn;
    a longer one shows its last `budget` messages and says how many came before)."""
    rows = TurnRecord.objects.filter(run_id=run_id, pk__gt=after)
    if before is not None:
        rows = rows.filter(pk__lt=before)
    candidates = list(
        rows.order_by("-pk").defer("system", "prompt", "dials").annotate(n=Count("messages"))[: budget + 1]
    )
    chosen: list[tuple[TurnRecord, int]] = []
    used = 0
    for record in candidates:
        size = int(getattr(record, "n", 0))
        if chosen and (used + size > budget or len(chosen) == budget):
            break
        chosen.append((record, size))
        used += size
    more = len(chosen) < len(candidates)
    ids = [record.pk for record, _ in chosen]
    short = [record.pk for record, size in chosen if size <= budget]
    long = [record.pk for record, size in chosen if size > budget]
    messages: dict[int, list[TurnMessage]] = {}
    for message in TurnMessage.objects.filter(turn_id__in=short).order_by("turn_id", "pk"):
        messages.setdefault(message.turn_id, []).append(message)
    # a short Turn's calls are all read (their lines show the done ones), so its totals are summed here; a long
    # one's are counted by the database
    totals: dict[int, tuple[int, float]] = {}
    calls: dict[int, list[ModelCall]] = {}
    for call in ModelCall.objects.filter(turn_id__in=short).only(*CALL_FIELDS).order_by("seq"):
        n, ms = totals.get(call.turn_id, (0, 0.0))
        totals[call.turn_id] = (n + 1, ms + (call.latency_ms or 0.0))
        if call.status == ModelCall.Status.DONE:
            calls.setdefault(call.turn_id, []).append(call)
    if long:
        for row in (
            ModelCall.objects.filter(turn_id__in=long)
            .values("turn_id")
            .annotate(calls=Count("id"), ms=Sum("latency_ms"))
        ):
            totals[row["turn_id"]] = (int(row["calls"]), float(row["ms"] or 0))
    items = []
    for record, size in chosen:
        n, ms = totals.get(record.pk, (0, 0.0))
        if size <= budget:
            lines = conversation_lines(messages.get(record.pk, []), calls.get(record.pk, []))
            earlier, hidden = None, 0
        else:
            lines, earlier, hidden = _window(record.pk, None, budget)
        view = TurnView(record, lines, n, round(ms, 1))
        items.append(TurnItem(view, earlier, hidden))
    prev = candidates[len(chosen)].pk if more else 0
    return TurnPage(items, ids[-1] if more and ids else None, after, prev)


def _window(turn_pk: int, before: int | None, limit: int) -> tuple[list[Line], int | None, int]:
    """The lines of up to `limit` messages of a Turn below message key `before` (the newest ones), with the key of
    the first shown when older ones remain, and how many remain. Keys, not seqs: a Turn can hold more than one
    conversation (a reroll starts another), each with its own seqs."""
    rows = TurnMessage.objects.filter(turn_id=turn_pk)
    if before is not None:
        rows = rows.filter(pk__lt=before)
    found = list(rows.order_by("-pk")[:limit])[::-1]
    if not found:
        return [], None, 0
    start = found[0].pk
    left = TurnMessage.objects.filter(turn_id=turn_pk, pk__lt=start).count()
    replies_before = TurnMessage.objects.filter(turn_id=turn_pk, pk__lt=start, kind="reply").count()
    replies = sum(1 for m in found if m.kind == "reply")
    own = list(
        ModelCall.objects.filter(turn_id=turn_pk, status=ModelCall.Status.DONE)
        .only(*CALL_FIELDS)
        .order_by("seq")[replies_before : replies_before + replies]
    )
    return conversation_lines(found, own), (start if left else None), left


def turn_lines(turn_pk: int, before: int, limit: int = TURN_PAGE) -> tuple[list[Line], int | None, int]:
    """Older lines of one long Turn: the messages below key `before`, for its "earlier messages" loader."""
    return _window(turn_pk, before, limit)


def head(run_id: str, last_seq: int) -> Feeds:
    """The summary and the newest page of each feed, as the run page and its live regions show them."""
    return Feeds(summary(run_id, last_seq), step_page(run_id), turn_page(run_id))
