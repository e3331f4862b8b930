"""What every Console page's header shows: the count of the open Gates the user may answer (kept live by
/ws/gates/count/)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from console.access import can_read
from console.pages.assigned import Answerer
from console.pages.gates import open_count


def open_gates(request: HttpRequest) -> dict[str, Any]:
    """The count for readers only; the login page and the admin's own pages get nothing to read."""
    if not request.path.startswith(("/accounts/", "/admin/", "/api/")) and can_read(getattr(request, "user", None)):
        return {"open_gate_count": open_count(Answerer.of(request.user)), "show_gate_count": True}
    return {}
