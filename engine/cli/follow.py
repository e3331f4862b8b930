"""`jr2 run` following a run as it moves: it polls `GET /api/runs/<id>` and `GET /api/runs/<id>/journal?after=<seq>`
and says one line per change: each journal entry a person cares about (picks with their outcome, Gate answers,
Effects starting and finishing, faults, a cancel; time passing is left out), the state value when it changes, Turns
starting and ending, each Gate that opens with the `jr2 send` command that answers it, Gates closing, and the
status when it changes. It stops when the run has ended and every entry up to its last step was said."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from engine.cli.client import Client
from engine.cli.text import LIVE, gate_lines, state_line
from engine.core.journal.replay import describe

__all__ = ["Follower", "INTERVAL"]

INTERVAL = 0.25
_UNSEEN = object()


class Follower:
    """Follows one run; `say` gets each line."""

    def __init__(
        self, api: Client, run_id: str, root: str, say: Callable[[str], None], interval: float = INTERVAL
    ) -> None:
        self.api = api
        self.run_id = run_id
        self.root = root
        self.say = say
        self.interval = interval
        self.seq = 0
        self.status: str | None = None
        self.value: Any = _UNSEEN
        self.gates: dict[str, dict[str, Any]] = {}
        self.turns: dict[str, dict[str, Any]] = {}
        self.slots: dict[str, str] = {}

    def follow(self) -> dict[str, Any]:
        """Poll until the run has ended; its last body. Ctrl-C raises KeyboardInterrupt between polls, never in
        the middle of a request: interrupted there, the HTTP client's connection pool can be left locked and the
        command hang on its way out. A second Ctrl-C interrupts at once."""
        with _ctrl_c_between_polls() as asked:
            while True:
                run = self.poll()
                if asked.is_set():
                    raise KeyboardInterrupt
                if run.get("status") not in LIVE and self.seq >= int(run.get("seq") or 0):
                    return run
                if asked.wait(self.interval):
                    raise KeyboardInterrupt

    def poll(self) -> dict[str, Any]:
        """One look: the run, then the journal entries up to the run's step (so the two agree), then what
        changed."""
        run: dict[str, Any] = self.api.get(f"/api/runs/{self.run_id}")
        for effect in run.get("effects") or []:
            self.slots[str(effect.get("id"))] = str(effect.get("slot"))
        last = int(run.get("seq") or 0)
        turns = {str(t.get("id")): t for t in run.get("turns") or []}
        if last > self.seq:
            journal = self.api.get(f"/api/runs/{self.run_id}/journal", after=self.seq, limit=1000)
            for row in journal.get("entries") or []:
                if int(row["seq"]) > last:
                    break
                entry = row.get("entry") or {}
                turn = str(entry.get("turn") or "")
                if turn in turns and turn not in self.turns:  # a new Turn is told before its first pick
                    self._turn_started(turn, turns[turn])
                line = self.entry_line(entry)
                if line:
                    self.say(line)
                self.seq = int(row["seq"])
        self.changes(run)
        return run

    def _turn_started(self, turn_id: str, turn: dict[str, Any]) -> None:
        model = f" [{turn.get('model')}]" if turn.get("model") else ""
        self.say(f"Turn {turn_id}: {turn.get('agent')} starts in {turn.get('state')}{model}")
        self.turns[turn_id] = turn

    def entry_line(self, entry: dict[str, Any]) -> str | None:
        kind = entry.get("kind")
        if kind in ("start", "advance"):
            return None
        line = describe(entry, self.slots)
        if kind == "pick":
            line += f": {entry.get('outcome')}"
        return line

    def changes(self, run: dict[str, Any]) -> None:
        value = run.get("value")
        if value != self.value:
            self.value = value
            self.say(f"state: {state_line(self.root, value)}")
        turns = {str(t.get("id")): t for t in run.get("turns") or []}
        for turn_id, turn in self.turns.items():
            if turn_id not in turns:
                self.say(f"Turn {turn_id} of {turn.get('agent')} ended")
        for turn_id, turn in turns.items():
            if turn_id not in self.turns:
                self._turn_started(turn_id, turn)
        self.turns = {turn_id: turn for turn_id, turn in turns.items()}
        gates = {str(g.get("id")): g for g in run.get("gates") or []}
        for gate_id in self.gates:
            if gate_id not in gates:
                self.say(f"Gate {gate_id} closed")
        for gate_id, gate in gates.items():
            if gate_id not in self.gates:
                for line in gate_lines(self.run_id, gate):
                    self.say(line)
        self.gates = gates
        status = run.get("status")
        if status != self.status:
            self.status = status
            reason = f": {run.get('reason')}" if run.get("reason") and status not in LIVE else ""
            self.say(f"status: {status}{reason}")


@contextmanager
def _ctrl_c_between_polls() -> Iterator[threading.Event]:
    """An event set by Ctrl-C (SIGINT) while the block runs; a second Ctrl-C raises KeyboardInterrupt at once.
    An event nothing sets off the main thread (where signals cannot be caught) and in a process that ignores
    SIGINT (started with nohup, or as a background job), which goes on ignoring it."""
    asked = threading.Event()
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield asked
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if asked.is_set():
            raise KeyboardInterrupt
        asked.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield asked
    finally:
        signal.signal(signal.SIGINT, previous)
