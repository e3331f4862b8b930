"""`/audit/`: the audit trail (engine/web/audit.py), filterable by user, workflow and time, and as CSV
(`?format=csv`). Operators read it (the permission engine.cancel_run): it says who did what."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.access import needs, readers_only
from console.pages.links import query_with
from engine.runtime.registry import workflows
from engine.web.audit import COLUMNS, audit, csv_text, read_filter

__all__ = ["audit_page"]


@readers_only
def audit_page(request: HttpRequest) -> HttpResponse:
    needs(request.user, "cancel")
    which, errors = read_filter(request.GET)
    rows = audit(which) if not errors else []
    if request.GET.get("format") == "csv" and not errors:
        response = HttpResponse(csv_text(rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="jr2-audit.csv"'
        return response
    context = {
        "rows": rows,
        "columns": COLUMNS,
        "filter": {key: request.GET.get(key, "") for key in ("user", "workflow", "since", "until")},
        "errors": errors,
        "workflows": workflows().names(),
        "limit": which.limit,
        "csv": "?" + query_with(request.GET, format="csv"),
    }
    return render(request, "console/audit.html", context, status=400 if errors else 200)
