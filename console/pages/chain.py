"""The Chain that led to an open Gate, shown beside its `meta`: the Agent's pick that opened it (or that the Gate
asks a person to confirm) and the reply that pick came after, in the journal's own words.

    chain_of("run123")     # ["the duplicates Effect finished", "triager picked label {label: "bug", ...}"]

It reads the run's latest journal entries: the last pick the Machine took, and, when the Agent picked it after a
reply (an Effect's result, a Gate's answer), that reply first. A Gate no Agent's pick led to has an empty Chain.
"""

from __future__ import annotations

from engine.core.journal.entries import Entry, JournalError
from engine.models import JournalEntry
from engine.runtime.index import TAKEN_PICKS

__all__ = ["chain_of"]

#: How far back a Chain is looked for.
LOOK_BACK = 200
REPLIES = ("effect_done", "effect_failed", "gate")


def chain_of(run_id: str, before_seq: int | None = None) -> list[str]:
    """The words of the pick that led to the run's open Gates, and the reply before it (oldest first)."""
    rows = JournalEntry.objects.filter(run_id=run_id).exclude(kind__in=("advance", "claim", "effect_started"))
    if before_seq is not None:
        rows = rows.filter(seq__lte=before_seq)
    entries = list(rows.order_by("-seq").values_list("kind", "entry")[:LOOK_BACK])
    for index, (kind, data) in enumerate(entries):
        if kind == "pick" and data.get("outcome") in TAKEN_PICKS:
            chain = [_words(data)]
            if index + 1 < len(entries) and entries[index + 1][0] in REPLIES:
                chain.insert(0, _words(entries[index + 1][1]))
            return chain
        if kind in ("start", "fork"):
            break
    return []


def _words(data: dict) -> str:
    try:
        return Entry.from_json(data).describe()
    except JournalError:
        return str(data.get("kind", "an entry"))
