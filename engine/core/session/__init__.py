"""`Session`, the deterministic core of one run (core.py), and the records it keeps of its parties.

session = Session(machine, input={...})     # the start; `session.drain()` gives what it asks for
session.pick("writer", "ask", {...}); session.send_gate(...); session.effect_done(...); session.advance(ms)
Session.replay(machine, session.journal)    # the same run again, from its journal
"""

from engine.core.journal.entries import HOST_KINDS
from engine.core.session.core import Session
from engine.core.session.errors import SessionError
from engine.core.session.probe import PartyEvent
from engine.core.session.records import Gate, Outstanding, PendingEffect, Turn

__all__ = ["Session", "Turn", "Gate", "PendingEffect", "Outstanding", "PartyEvent", "SessionError", "HOST_KINDS"]
