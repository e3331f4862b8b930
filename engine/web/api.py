"""The JSON API under /api/ (django-ninja: pydantic schemas, an OpenAPI document at /api/openapi.json and
interactive docs at /api/docs).

Views are thin: they read what the runtime committed (the Run row's `view`, the journal, the Turn records) and
hand inputs to the host that drives the run; the Session decides what an input does and the view maps its answer
to a status code. Every error is JSON with a `detail` a person can act on.

Auth: `Authorization: Bearer <token>` (tokens from `jr2 token create <username>`, stored hashed) on every call that
changes something, and on reads unless `JR2_OPEN_READS` is on. A token carries its user's permissions:
`engine.start_run`, `engine.answer_gate`, `engine.cancel_run`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI, Query, Schema
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.security import HttpBearer
from pydantic import Field, StrictBool, StrictStr, ValidationError

from engine import __version__
from engine.core.blank import BLANK_REFUSED, blank_fields, blank_text
from engine.models import JournalEntry, ModelCall, Run, TurnMessage, TurnRecord
from engine.runtime import store
from engine.runtime.admission import check_gate_answer
from engine.runtime.claims import refusal_on_view
from engine.runtime.errors import HostError, InputPending, NoHost, RunNotHosted
from engine.runtime.host import current_host
from engine.runtime.registry import workflows
from engine.runtime.view import RunView
from engine.web import ratelimit, tokens
from engine.web import search as run_search
from engine.web.answering import answer_refusal, door_of, is_operator, reads_groups
from engine.web.api_schemas import (
    RATE_LIMITED,
    Accepted,
    ClaimOut,
    Created,
    ExportOut,
    Forked,
    InputOut,
    JournalOut,
    Outcome,
    RunOut,
    RunPage,
    TurnOut,
    WorkflowOut,
    errors,
)
from engine.web.audit import audit, csv_text, read_filter
from engine.web.hosting import ready_host

__all__ = ["api"]

T = TypeVar("T")

api = NinjaAPI(
    title="jr2",
    version=__version__,
    description="Start runs of jr2 workflows, answer their Gates, read their state, journal and Turns.",
    urls_namespace="api",
)


# -- auth --------------------------------------------------------------------------------------------------------


class RateLimited(HttpError):
    """Too many wrong tokens from one address: 429 with Retry-After."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(429, f"too many calls with a wrong API token from this address; try again in {retry_after} s")
        self.retry_after = retry_after


class TokenAuth(HttpBearer):
    """A bearer token from `jr2 token create`; the request acts as its user.

    Tokens are stored as SHA-256 hashes (a token has 256 random bits, so a fast hash is enough); the record is found
    by its prefix and the hashes are compared with `hmac.compare_digest`, in constant time, then trusted for
    `JR2_TOKEN_CACHE_SECONDS` in this process (engine/web/tokens.py: how revocation is honoured). Wrong tokens are
    counted per address (`JR2_RATE_TOKEN`, failures/seconds): past the limit every call with a token is refused
    with 429 until the window ends."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        self._refuse_blocked(request)
        found = tokens.trusted(token) or tokens.look_up(token)
        if found is None:
            return self._wrong(request)
        tokens.touch(found[1])
        request.user = found[0]
        return found[0]

    @staticmethod
    def _refuse_blocked(request: HttpRequest) -> None:
        wait = ratelimit.blocked("token", ratelimit.client_ip(request), _token_rate())
        if wait:
            raise RateLimited(wait)

    @staticmethod
    def _wrong(request: HttpRequest) -> None:
        ratelimit.failed("token", ratelimit.client_ip(request), _token_rate())
        return None


def _token_rate() -> str:
    return str(getattr(settings, "JR2_RATE_TOKEN", "60/60"))


class AsyncTokenAuth(TokenAuth):
    """The same check for the async operations (starting runs, answering Gates), awaited by django-ninja on the
    event loop: a token trusted a moment ago costs no thread and no query; only a lookup goes to a thread."""

    is_async = True

    async def __call__(self, request: HttpRequest) -> Any:  # type: ignore[override]
        header = request.headers.get(self.header, "")
        scheme, _, token = header.partition(" ")
        if not header or scheme.lower() != self.openapi_scheme:
            return None
        self._refuse_blocked(request)
        found = tokens.trusted(token)
        if found is None:
            found = await _looked_up(token)
        if found is None:
            return self._wrong(request)
        if tokens.due(found[1]):
            await _read(tokens.touch, found[1])
        request.user = found[0]
        return found[0]


#: The token lookups under way, by token: the calls that come while one is read wait for it (when the cache lapses
#: with 50 calls in flight, one query instead of 50).
_looking_up: dict[str, asyncio.Future[tuple[Any, int] | None]] = {}


async def _looked_up(token: str) -> tuple[Any, int] | None:
    """`tokens.look_up` on the host's database thread, once for all the calls that ask at the same time."""
    found = _looking_up.get(token)
    if found is None:
        found = asyncio.ensure_future(_read(tokens.look_up, token))
        _looking_up[token] = found
        found.add_done_callback(lambda _: _looking_up.pop(token, None))
    return await asyncio.shield(found)


class ReadAuth(TokenAuth):
    """Reads: a token, or nobody when `JR2_OPEN_READS` is on."""

    def __call__(self, request: HttpRequest) -> Any:
        user = super().__call__(request)
        if user is None and getattr(settings, "JR2_OPEN_READS", False):
            return AnonymousUser()
        return user


WRITE = TokenAuth()
ASYNC_WRITE = AsyncTokenAuth()
READ = ReadAuth()


def require(request: HttpRequest, permission: str, doing: str) -> None:
    if not request.user.has_perm(f"engine.{permission}"):
        raise HttpError(403, f'user "{request.user}" may not {doing}: it needs the permission engine.{permission}')


# -- errors: always JSON with a `detail` ------------------------------------------------------------------------


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: Exception) -> HttpResponse:
    return api.create_response(
        request,
        {
            "detail": "a valid API token is needed: send `Authorization: Bearer <token>` (create one with "
            "`jr2 token create <username>`)"
        },
        status=401,
    )


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    errors = [
        {
            "field": ".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path")),
            "message": e.get("msg", ""),
        }
        for e in exc.errors
    ]
    detail = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
    return api.create_response(request, {"detail": f"the request is not valid: {detail}", "errors": errors}, status=400)


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = api.create_response(request, {"detail": str(exc)}, status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(HostError)
def _host_error(request: HttpRequest, exc: HostError) -> HttpResponse:
    if isinstance(exc, InputPending):
        return api.create_response(request, {"input": exc.input_id, "url": exc.url, "detail": str(exc)}, status=202)
    status = 409 if isinstance(exc, RunNotHosted) else 400
    return api.create_response(request, {"detail": str(exc)}, status=status)


@api.exception_handler(Exception)
def _internal(request: HttpRequest, exc: Exception) -> HttpResponse:
    if isinstance(exc, HttpError):
        return api.create_response(request, {"detail": str(exc)}, status=exc.status_code)
    import logging

    logging.getLogger("engine.web.api").exception("API error on %s %s", request.method, request.path)
    return api.create_response(
        request, {"detail": f"internal error ({type(exc).__name__}); the server log has the details"}, status=500
    )


def door_errors(err: ValidationError) -> tuple[str, list[dict[str, str]]]:
    """A door's validation error in words that name each field."""
    errors = [{"field": ".".join(str(p) for p in e["loc"]) or "(input)", "message": e["msg"]} for e in err.errors()]
    return "; ".join(f"{e['field']}: {e['message']}" for e in errors), errors


# -- schemas (the response bodies are in engine/web/api_schemas.py) ----------------------------------------------------


class RunFilters(Schema):
    """The search's filters (engine/web/search.py reads them from the query; they are listed here for the OpenAPI
    document)."""

    workflow: str | None = None
    status: str | None = None
    in_: str | None = Field(None, alias="in")
    passed: str | None = None
    event: str | None = None
    agent: str | None = None
    gate: str | None = None
    text: str | None = None
    not_workflow: str | None = None
    not_status: str | None = None
    not_in: str | None = None
    not_passed: str | None = None
    not_event: str | None = None
    not_agent: str | None = None
    not_gate: str | None = None
    not_text: str | None = None
    after: str | None = None
    before: str | None = None
    prefix: str | None = None
    page: int = 1
    page_size: int = 50


#: The request bodies, read by the views themselves (a door is the workflow's own model; a Gate answer is checked
#: by the engine), declared for the document.
DOOR_BODY = {
    "type": "object",
    "description": "the workflow's door input (GET /api/workflows/{name} gives its JSON "
    "schema); empty for a workflow without a door",
}
EXPORT_BODY = {"type": "object", "description": "a run as GET /api/runs/{run_id}/export gives it (format jr2.run)"}
GATE_BODY = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "description": "the event's name in `type`, its input beside it",
}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": schema}}}, **RATE_LIMITED}


# -- workflows ------------------------------------------------------------------------------------------------


def _workflow_json(name: str, loaded: Any, live: int = 0, detail: bool = False) -> dict[str, Any]:
    machine = loaded.machine
    if machine is None:
        return {"name": name, "file": loaded.file, "loaded": False, "error": loaded.message(), "where": loaded.where}
    data: dict[str, Any] = {
        "name": name,
        "file": loaded.file,
        "loaded": True,
        "machine": machine.id,
        "digest": machine.digest,
        "agents": {slot: agent.model for slot, agent in machine.agents.items()},
        "warnings": [w.to_json() for w in machine.warnings()],
        "live_runs": live,
        "seats": [line.strip() for line in machine.seats_text(name).splitlines()[1:]],
    }
    if detail:
        data.update(
            door=machine.door.model_json_schema() if machine.door is not None else None,
            menus={slot: machine.menu(slot) for slot in machine.menus()},
            seats_data=machine.seats_json(),
            seats_text=machine.seats_text(name),
        )
    return data


@api.get(
    "/workflows",
    auth=READ,
    response={200: list[WorkflowOut], **errors(401, 429)},
    exclude_unset=True,
    openapi_extra=RATE_LIMITED,
    summary="Every workflow, with its seats and warnings; failed files too",
)
def list_workflows(request: HttpRequest) -> list[dict[str, Any]]:
    found = workflows()
    live = {
        row["workflow"]: row["n"]
        for row in Run.objects.filter(status__in=Run.LIVE).values("workflow").annotate(n=Count("id"))
    }
    return [_workflow_json(f.name, f, live.get(f.name, 0)) for f in found.files if f.is_workflow]


@api.get(
    "/workflows/{name}",
    auth=READ,
    response={200: WorkflowOut, **errors(401, 404, 429)},
    exclude_unset=True,
    openapi_extra=RATE_LIMITED,
    summary="One workflow: door schema, Menus, seats, warnings",
)
def get_workflow(request: HttpRequest, name: str) -> dict[str, Any]:
    loaded = workflows().find(name)
    if loaded is None:
        raise HttpError(404, f'no workflow "{name}" (workflows: {", ".join(workflows().names()) or "none"})')
    return _workflow_json(name, loaded, Run.objects.filter(workflow=name, status__in=Run.LIVE).count(), True)


@api.post(
    "/workflows/{name}/runs",
    auth=ASYNC_WRITE,
    response={201: Created, **errors(400, 401, 403, 404, 409, 429, 503)},
    openapi_extra=_body(DOOR_BODY),
    summary="Start a run; the body is the door input",
)
async def start_run(request: HttpRequest, name: str) -> tuple[int, dict[str, Any]]:
    require(request, "start_run", "start runs")
    found = workflows()
    loaded = found.find(name)
    if loaded is None:
        raise HttpError(404, f'no workflow "{name}" (workflows: {", ".join(found.names()) or "none"})')
    if loaded.machine is None:
        raise HttpError(409, f'workflow "{name}" did not load, so it cannot run: {loaded.message()}')
    body = _json_body(request)
    blank = blank_fields(loaded.machine.door, body)
    if blank:
        raise _Invalid(
            f'the input of workflow "{name}" is not valid: {blank_text(loaded.machine.door, body)}',
            [{"field": field, "message": BLANK_REFUSED} for field in blank],
        )
    seats = _played_seats(request, loaded.machine)
    host = await _host()
    try:
        run_id = await host.start_run(name, body, user_id=request.user.pk, seats=seats)
    except ValidationError as err:
        detail, errors = door_errors(err)
        raise _Invalid(f'the input of workflow "{name}" is not valid: {detail}', errors) from err
    status = _committed_status(host, run_id) or await _read(_status, run_id)
    return 201, {"id": run_id, "workflow": name, "status": status, "url": f"/api/runs/{run_id}"}


def _played_seats(request: HttpRequest, machine: Any) -> dict[str, tuple[int, str]]:
    """`?play=<agent>[,<agent>...]`: those seats held for the token's user from the start (so no model Turn starts
    for them), as the Console's "play ... myself" holds them."""
    wanted = [a.strip() for a in request.GET.get("play", "").split(",") if a.strip()]
    if not wanted:
        return {}
    require(request, "play_seat", "play an Agent's seat")
    unknown = [a for a in wanted if a not in machine.agents]
    if unknown:
        raise HttpError(
            400,
            f"play names {', '.join(unknown)}, which is no Agent of this workflow "
            f"(its Agents: {', '.join(sorted(machine.agents)) or 'none'})",
        )
    return {agent: (request.user.pk, request.user.get_username()) for agent in wanted}


class _Invalid(HttpError):
    def __init__(self, detail: str, errors: list[dict[str, str]]) -> None:
        super().__init__(400, detail)
        self.errors = errors


@api.exception_handler(_Invalid)
def _invalid_input(request: HttpRequest, exc: _Invalid) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc), "errors": exc.errors}, status=400)


# -- runs -----------------------------------------------------------------------------------------------------


@api.get(
    "/runs",
    auth=READ,
    response={200: RunPage, **errors(400, 401, 429)},
    openapi_extra=RATE_LIMITED,
    summary="Runs, newest first, searched on the server: ?workflow=, ?status=, ?in= (state now), ?passed= "
    "(state passed through), ?event= (taken), ?agent=, ?gate= (waiting at), ?text= (in the input or "
    "output), each comma-separated (any of) with a not_ twin (none of); ?after=, ?before= (start time, "
    "ISO); ?prefix= (4+ characters of an id), ?page=, ?page_size=",
)
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> dict[str, Any]:
    _known_query(request, [field.alias or name for name, field in RunFilters.model_fields.items()])
    search = run_search.parse(request.GET)
    if search.errors:
        raise HttpError(400, "; ".join(search.errors))
    runs = search.apply(Run.objects.all())
    if filters.prefix is not None:
        if len(filters.prefix) < 4:
            raise HttpError(400, f"a run id prefix needs at least 4 characters; got {filters.prefix!r}")
        runs = runs.filter(id__startswith=filters.prefix)
    size = min(max(filters.page_size, 1), 500)
    count = runs.count()
    pages = max(1, math.ceil(count / size))
    page = min(max(filters.page, 1), pages)
    rows = runs.order_by("-created_at", "id")[(page - 1) * size : page * size]
    return {
        "count": count,
        "page": page,
        "pages": pages,
        "results": [
            {
                "id": r.id,
                "workflow": r.workflow,
                "status": r.status,
                "scripted": r.scripted,
                "open_gates": len(RunView.of(r.view).gates),
                "reason": r.reason,
                "created_at": r.created_at.isoformat(),
                "updated_at": r.updated_at.isoformat(),
            }
            for r in rows
        ],
    }


# Registered before /runs/{run_id}: the URL patterns are tried in the order the paths were added, and
# "import" is a run id as far as that pattern knows (POST /api/runs/import answered 405).
@api.post(
    "/runs/import",
    auth=WRITE,
    response={201: Created, **errors(400, 401, 403, 429)},
    openapi_extra=_body(EXPORT_BODY),
    summary="Import a run exported by GET /api/runs/<id>/export, read-only; a bad file changes nothing",
)
def import_(request: HttpRequest) -> tuple[int, dict[str, Any]]:
    from engine.web.exchange import ExchangeError, import_run

    require(request, "start_run", "import runs")
    try:
        run = import_run(_json_body(request), user_id=request.user.pk)
    except ExchangeError as err:
        raise _Invalid(str(err), [{"field": "", "message": e} for e in err.errors]) from err
    return 201, {"id": run.id, "workflow": run.workflow, "status": run.status, "url": f"/api/runs/{run.id}"}


def open_gates_json(workflow: str, view: RunView) -> list[dict[str, Any]]:
    """A run's open Gates as the API shows them: id, state, meta, and each accepted event's description and input
    schema (from the workflow's Machine)."""
    loaded = workflows().find(workflow)
    machine = loaded.machine if loaded is not None else None
    gates = []
    for gate in view.gates:
        events = []
        for name in gate.accepts:
            event = machine.gate_event(gate.id, name) if machine is not None else None
            events.append(
                {
                    "type": name,
                    "description": event.description if event else None,
                    "schema": event.json_schema() if event else None,
                }
            )
        held = view.claim(gate.id, time.time())
        gates.append(
            {
                "id": gate.id,
                "state": gate.path or gate.state,
                "meta": dict(gate.meta),
                "events": events,
                "assign": list(gate.assign) if gate.assign is not None else None,
                "claim": None if held is None else {"by": held.by, "until": _iso(held.until)},
                "due": None if gate.due is None else _iso(gate.due / 1000),
            }
        )
    return gates


@api.get(
    "/runs/{run_id}",
    auth=READ,
    response={200: RunOut, **errors(401, 404, 429)},
    openapi_extra=RATE_LIMITED,
    summary="One run: status, state, context, output, open Gates, Turns",
)
def get_run(request: HttpRequest, run_id: str) -> dict[str, Any]:
    run = _run(run_id)
    view = RunView.of(run.view)
    gates = open_gates_json(run.workflow, view)
    return {
        "id": run.id,
        "workflow": run.workflow,
        "status": run.status,
        "digest": run.digest,
        "input": run.input,
        "output": run.output,
        "reason": run.reason,
        "scripted": run.scripted,
        "value": view.value,
        "context": view.context,
        "gates": gates,
        "turns": [turn.to_json() for turn in view.turns],
        "effects": [effect.to_json() for effect in view.effects],
        "next_due": view.next_due,
        "seq": run.seq,
        "parent": run.parent_id,
        "parent_step": run.parent_step,
        "forks": list(run.forks.values_list("id", flat=True)),
        "imported_from": run.imported_from or None,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
    }


@api.get(
    "/runs/{run_id}/turns",
    auth=READ,
    response={200: list[TurnOut], **errors(401, 404, 429)},
    openapi_extra=RATE_LIMITED,
    summary="The run's Turns: conversations, model calls, usage",
)
def get_turns(request: HttpRequest, run_id: str) -> list[dict[str, Any]]:
    run = _run(run_id)
    messages: dict[int, list[dict[str, Any]]] = {}
    for m in TurnMessage.objects.filter(run=run).order_by("conversation", "seq"):
        messages.setdefault(m.turn_id, []).append(
            {
                "seq": m.seq,
                "conversation": m.conversation,
                "role": m.role,
                "kind": m.kind,
                "content": m.content,
                "at": m.created_at.isoformat(),
            }
        )
    calls: dict[int, list[dict[str, Any]]] = {}
    for c in ModelCall.objects.filter(run=run).order_by("seq"):
        calls.setdefault(c.turn_id, []).append(
            {
                "seq": c.seq,
                "model": c.model,
                "scripted": c.scripted,
                "status": c.status,
                "request": c.request,
                "messages": c.messages,
                "response": c.response,
                "tool_calls": c.tool_calls,
                "stop_reason": c.stop_reason,
                "error": c.error,
                "latency_ms": c.latency_ms,
                "usage": {
                    "input": c.input_tokens,
                    "output": c.output_tokens,
                    "cache_read": c.cache_read_tokens,
                    "cache_write": c.cache_write_tokens,
                },
                "started_at": c.started_at.isoformat(),
                "finished_at": c.finished_at.isoformat() if c.finished_at else None,
            }
        )
    return [
        {
            "turn": t.turn,
            "agent": t.agent,
            "state": t.state,
            "model": t.model,
            "declared_model": t.declared_model,
            "scripted": t.scripted,
            "status": t.status,
            "reason": t.reason,
            "dials": t.dials,
            "conversation": t.conversation,
            "prompt": t.prompt,
            "system": t.system,
            "usage": {
                "input": t.input_tokens,
                "output": t.output_tokens,
                "cache_read": t.cache_read_tokens,
                "cache_write": t.cache_write_tokens,
            },
            "started_at": t.started_at.isoformat(),
            "ended_at": t.ended_at.isoformat() if t.ended_at else None,
            "messages": messages.get(t.pk, []),
            "calls": calls.get(t.pk, []),
        }
        for t in TurnRecord.objects.filter(run=run).order_by("started_at", "id")
    ]


@api.get(
    "/runs/{run_id}/journal",
    auth=READ,
    response={200: JournalOut, **errors(400, 401, 404, 429)},
    openapi_extra=RATE_LIMITED,
    summary="The run's journal: every input, in order",
)
def get_journal(request: HttpRequest, run_id: str, after: int = 0, limit: int = 1000) -> dict[str, Any]:
    _known_query(request, ("after", "limit"))
    run = _run(run_id)
    entries = JournalEntry.objects.filter(run=run, seq__gt=after).order_by("seq")[: min(max(limit, 1), 10000)]
    return {
        "run": run.id,
        "workflow": run.workflow,
        "digest": run.digest,
        "seq": run.seq,
        "entries": [
            {"seq": e.seq, "kind": e.kind, "entry": e.entry, "out": e.out, "at": e.at.isoformat()} for e in entries
        ],
    }


@api.post(
    "/runs/{run_id}/gates/{path:gate}/events",
    auth=ASYNC_WRITE,
    response={200: Outcome, 202: Accepted, **errors(400, 401, 403, 404, 409, 429, 503)},
    openapi_extra=_body(GATE_BODY),
    summary='Answer an open Gate: the body is {"type": <event>, ...its input}. Checked at once against the run\'s '
    "committed view; 200 when delivered within JR2_RELAY_WAIT, else 202: kept, and delivered when a worker holds the "
    "run",
)
async def answer_gate(request: HttpRequest, run_id: str, gate: str) -> Any:
    require(request, "answer_gate", "answer Gates")
    run, refused = await _answering_here(run_id, request.user, gate)
    open_gates = [g["id"] for g in (run.view or {}).get("gates", [])]
    _refuse_imported(run, "its Gates cannot be answered here")
    if not run.live:
        raise HttpError(409, f"run {run_id} has ended ({run.status}); its Gates are closed")
    if gate not in open_gates:
        if await _read(_answered, run, gate):
            raise HttpError(
                409,
                f'Gate "{gate}" of run {run_id} was already answered (by a concurrent answer, or '
                f"earlier) and is closed; nothing was delivered (open Gates: "
                f"{', '.join(open_gates) or 'none'})",
            )
        raise HttpError(404, f'run {run_id} has no open Gate "{gate}" (open Gates: {", ".join(open_gates) or "none"})')
    if refused is not None:
        raise HttpError(*refused)
    body = _json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise HttpError(
            400,
            'the body must be a JSON object with the event\'s name in "type" and its input beside '
            'it: {"type": "reply", "text": "..."}',
        )
    event = body.pop("type")
    blank = _blank_answer(run.workflow, gate, event, body)
    if blank:
        raise HttpError(400, f'the input of "{event}" is not valid: {blank}; nothing was delivered')
    host = await _host()
    machine = host.workflows.get(run.workflow)
    if machine is not None and machine.digest == run.digest:
        refusal = check_gate_answer(machine, run.view or {}, gate, event, body)
        if refusal is not None:
            _refused(run_id, gate, refusal)
    try:
        delivery = await host.deliver(
            run_id, "gate", gate=gate, event=event, params=body, by=request.user.get_username(), door=door_of(request)
        )
    except RunNotHosted as err:
        raise HttpError(409, f"run {run_id} is no longer live: {err}") from err
    _refused(run_id, gate, delivery)
    status = _committed_status(host, run_id) or await _read(_status, run_id)
    return {"outcome": delivery.outcome, "run": run_id, "status": status}


def _refused(run_id: str, gate: str, delivery: Any) -> None:
    """A Gate answer the run (or its committed view) refused, as the status and words the API answers."""
    if delivery.outcome == "refused":
        if delivery.code == "claimed":
            raise HttpError(409, f"{delivery.error}; nothing was delivered")
        if delivery.code == "no-gate":
            raise HttpError(
                409,
                f'Gate "{gate}" closed before this answer was delivered (another answer or the '
                "run moved on first); nothing was delivered",
            )
        if delivery.code == "ended":
            raise HttpError(409, f"run {run_id} has ended; nothing was delivered")
        accepts = "" if delivery.code == "not-accepted" else f' (Gate "{gate}" accepts: {", ".join(delivery.accepts)})'
        raise HttpError(400, f"{delivery.error}{accepts}")
    if delivery.outcome == "unmoved":
        raise HttpError(409, f"{delivery.error}: the Machine did not take it now")


@api.post(
    "/runs/{run_id}/cancel",
    auth=ASYNC_WRITE,
    response={200: Outcome, 202: Accepted, **errors(401, 403, 404, 409, 429, 503)},
    openapi_extra=RATE_LIMITED,
    summary="Cancel a run: 200 when done within JR2_RELAY_WAIT, else 202: kept, and carried out when a worker holds "
    "the run",
)
async def cancel_run(request: HttpRequest, run_id: str) -> Any:
    require(request, "cancel_run", "cancel runs")
    run = await _read(_run, run_id)
    _refuse_imported(run, "it cannot be cancelled")
    body = _json_body(request)
    reason = body.get("reason", "") if isinstance(body, dict) else None
    if not isinstance(body, dict) or set(body) - {"reason"} or not isinstance(reason, str) or len(reason) > 2000:
        raise HttpError(
            400, 'the body is empty or {"reason": "<why, in words, at most 2000 characters>"}; nothing was cancelled'
        )
    if not run.live:
        raise HttpError(409, f"run {run_id} has already ended ({run.status})")
    host = await _host()
    try:
        await host.cancel(run_id, by=request.user.get_username(), door=door_of(request), reason=reason.strip())
    except RunNotHosted as err:
        raise HttpError(409, f"run {run_id} is no longer live: {err}") from err
    return {"outcome": "cancelled", "run": run_id, "status": await _read(_status, run_id)}


@api.post(
    "/runs/{run_id}/gates/{path:gate}/claim",
    auth=ASYNC_WRITE,
    response={200: ClaimOut, 202: Accepted, **errors(401, 403, 404, 409, 429, 503)},
    openapi_extra=RATE_LIMITED,
    summary="Claim an open Gate: for JR2_CLAIM_MINUTES only the caller may answer it (claiming again extends it)",
)
async def claim_gate(request: HttpRequest, run_id: str, gate: str) -> dict[str, Any]:
    require(request, "answer_gate", "claim Gates")
    run, refused = await _read(_claimable, run_id, request.user, gate)
    if refused is not None:
        raise HttpError(*refused)
    return await _claim(request, run_id, gate, "claim")


@api.delete(
    "/runs/{run_id}/gates/{path:gate}/claim",
    auth=ASYNC_WRITE,
    response={200: ClaimOut, 202: Accepted, **errors(401, 403, 404, 409, 429, 503)},
    openapi_extra=RATE_LIMITED,
    summary="Release your claim on a Gate; an operator (engine.cancel_run) breaks anyone's",
)
async def release_gate(request: HttpRequest, run_id: str, gate: str) -> dict[str, Any]:
    require(request, "answer_gate", "release claims on Gates")
    run = await _read(_open_gate_run, run_id, gate)
    held = RunView.of(run.view).claim(gate, time.time())
    mine = held is None or held.by == request.user.get_username()
    if not mine and not is_operator(request.user):
        raise HttpError(
            403,
            f'Gate "{gate}" is claimed by {held.by if held else "nobody"}; only they may release it, and only an '
            "operator (the permission engine.cancel_run) may break it",
        )
    action = "release" if mine else "break"
    _refuse_claim(refusal_on_view(run.view, gate, action, request.user.get_username(), time.time()))
    return await _claim(request, run_id, gate, action)


def _refuse_claim(delivery: Any) -> None:
    """A refused claim, release or break as the API answers it."""
    if delivery is not None and delivery.outcome == "refused":
        status = {"no-gate": 404, "ended": 409, "claimed": 409, "not-claimed": 409}.get(delivery.code, 400)
        raise HttpError(status, f"{delivery.error}; nothing changed")


async def _claim(request: HttpRequest, run_id: str, gate: str, action: str) -> dict[str, Any]:
    host = await _host()
    user = request.user.get_username()
    try:
        delivery = await host.claim(run_id, gate, action, user, door=door_of(request))
    except RunNotHosted as err:
        raise HttpError(409, f"run {run_id} is no longer live: {err}") from err
    _refuse_claim(delivery)
    held = RunView.of(await _read(lambda: Run.objects.values_list("view", flat=True).get(id=run_id))).claim(
        gate, time.time()
    )
    words = {"claim": "claimed", "release": "released", "break": "broken"}[action]
    if held is None or action != "claim":
        return {"outcome": words, "run": run_id, "gate": gate, "by": None, "until": None}
    return {"outcome": words, "run": run_id, "gate": gate, "by": held.by, "until": _iso(held.until)}


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).isoformat()


def _open_gate_run(run_id: str, gate: str) -> Run:
    """The run, refused unless it is live and `gate` is open in it."""
    run = _run(run_id)
    _refuse_imported(run, "its Gates cannot be claimed here")
    if not run.live:
        raise HttpError(409, f"run {run_id} has ended ({run.status}); its Gates are closed")
    open_gates = RunView.of(run.view).gate_ids
    if gate not in open_gates:
        raise HttpError(404, f'run {run_id} has no open Gate "{gate}" (open Gates: {", ".join(open_gates) or "none"})')
    return run


@api.get(
    "/audit",
    auth=READ,
    response={200: dict[str, Any], **errors(400, 401, 403, 429)},
    openapi_extra=RATE_LIMITED,
    summary="The audit trail, newest first: every Gate answer, claim, cancel, seat change and one-tap link use; "
    "?user=, ?workflow=, ?since=, ?until= (ISO 8601), ?format=csv",
)
def get_audit(request: HttpRequest) -> Any:
    require(request, "cancel_run", "read the audit trail (operators may)")
    _known_query(request, ("user", "workflow", "since", "until", "format"))
    which, problems = read_filter(request.GET)
    fmt = request.GET.get("format", "json")
    if fmt not in ("json", "csv"):
        problems.append(f"format: {fmt[:40]!r} is not json or csv")
    if problems:
        raise HttpError(400, "; ".join(problems))
    rows = audit(which)
    if fmt == "csv":
        response = HttpResponse(csv_text(rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="jr2-audit.csv"'
        return response
    return {"count": len(rows), "limit": which.limit, "results": [row.to_json() for row in rows]}


@api.get(
    "/runs/{run_id}/inputs",
    auth=READ,
    response={200: list[InputOut], **errors(401, 404, 429)},
    openapi_extra=RATE_LIMITED,
    summary="The inputs people sent the run (Gate answers, claims, cancels, seat changes, picks made in a seat), "
    "newest first, each pending, delivered or refused with the reason",
)
def list_inputs(request: HttpRequest, run_id: str) -> list[dict[str, Any]]:
    _known_query(request, ())
    _run(run_id)
    return [found.as_json() for found in store.reports(run_id)]


@api.get(
    "/runs/{run_id}/inputs/{input_id}",
    auth=READ,
    response={200: InputOut, **errors(401, 404, 429)},
    openapi_extra=RATE_LIMITED,
    summary="What became of an input sent to the run: status pending, delivered or refused (with the reason in words)",
)
def get_input(request: HttpRequest, run_id: str, input_id: int) -> dict[str, Any]:
    _known_query(request, ())
    _run(run_id)
    found = store.report(run_id, input_id)
    if found is None:
        raise HttpError(404, f"run {run_id} has no input {input_id}")
    return found.as_json()


# -- forks, export and import ----------------------------------------------------------------------------------


class GateAnswer(Schema):
    gate: str
    event: str
    input: dict[str, Any] = {}


class ForkBody(Schema):
    step: int
    context: dict[str, Any] | None = None
    answer: GateAnswer | None = None
    #: The open Turns to restart from the fork's context (their prompt rebuilt): true for all, or Agent names.
    restart_turns: StrictBool | list[StrictStr] = False


@api.post(
    "/runs/{run_id}/fork",
    auth=ASYNC_WRITE,
    response={201: Forked, **errors(400, 401, 403, 404, 409, 429, 503)},
    openapi_extra=RATE_LIMITED,
    summary="Fork a run from a step: a new run from the Session it had after that journal entry, with its "
    "context edited or a Gate answered differently, and its open Turns restarted from the edited context "
    "(`restart_turns`); the run itself never changes",
)
async def fork_run(request: HttpRequest, run_id: str, body: ForkBody) -> tuple[int, dict[str, Any]]:
    require(request, "start_run", "fork runs")
    await _read(_run, run_id)
    host = await _host()
    answer = (body.answer.gate, body.answer.event, body.answer.input) if body.answer is not None else None
    fork_id = await host.fork_run(
        run_id, body.step, context=body.context, answer=answer, restart=body.restart_turns, user_id=request.user.pk
    )
    run = await _read(lambda: Run.objects.get(id=fork_id))
    return 201, {
        "id": fork_id,
        "workflow": run.workflow,
        "status": run.status,
        "parent": run_id,
        "parent_step": body.step,
        "url": f"/api/runs/{fork_id}",
    }


@api.get(
    "/runs/{run_id}/export",
    auth=READ,
    response={200: ExportOut, **errors(401, 404, 429)},
    openapi_extra=RATE_LIMITED,
    summary="The run as one JSON file (format jr2.run, version 1): journal, snapshots, Turns, messages, model "
    "calls, Effects",
)
def export(request: HttpRequest, run_id: str) -> HttpResponse:
    from engine.web.exchange import export_run

    _run(run_id)
    # Sent as exported (`jr2 export` writes the same bytes' data); the declared ExportOut is the same model.
    return JsonResponse(export_run(run_id))


# -- helpers --------------------------------------------------------------------------------------------------


def _refuse_imported(run: Run, what: str) -> None:
    if run.imported:
        raise HttpError(409, f"run {run.id} was imported (from run {run.imported_from}) and is read-only: {what}")


async def _read(fn: Callable[..., T], *args: Any) -> T:
    """A read of the async operations, on the host's database thread (its kept connection) when this process runs
    a host, else on a thread of the request's own (a connection opened for it): no thread and no connection is
    made per request."""
    host = current_host()
    if host is None or not host.ready.is_set():
        return await sync_to_async(fn)(*args)
    return await host.db(fn, *args)


def _status(run_id: str) -> str:
    return str(Run.objects.values_list("status", flat=True).get(id=run_id))


def _driven_here(run_id: str) -> Run | None:
    """The run as its driver in this process last committed it (status, view, workflow and shape: the Run row's
    own, without reading it back), or None when no driver here holds it. The driver checks an input against its
    live Session again when it applies it, so an answer that raced another is still refused there."""
    host = current_host()
    driver = None if host is None or not host.ready.is_set() else host.drivers.get(run_id)
    if driver is None:
        return None
    return Run(
        id=run_id,
        workflow=driver.workflow,
        digest=driver.machine.digest,
        status=driver.status,
        view=driver.committed_view,
    )


def _committed_status(host: Any, run_id: str) -> str | None:
    """The status of the run's last committed step, as its driver in this process keeps it (the Run row's own,
    without reading it back); None when no driver here holds the run (a worker's, or one that ended)."""
    driver = host.drivers.get(run_id)
    return None if driver is None else str(driver.status)


def _answering(run_id: str, user: Any, gate: str) -> tuple[Run, tuple[int, str] | None]:
    """The run a Gate answer is for, and whether `user` may not answer `gate` now (assignment, claim)."""
    run = _run(run_id)
    return run, answer_refusal(user, run.view, gate)


async def _answering_here(run_id: str, user: Any, gate: str) -> tuple[Run, tuple[int, str] | None]:
    """`_answering`, from the run's driver in this process when one holds it (no read of the Run row), else from
    the database."""
    run = _driven_here(run_id)
    if run is None:
        return await _read(_answering, run_id, user, gate)
    if reads_groups(user, run.view, gate):
        return run, await _read(answer_refusal, user, run.view, gate)
    return run, answer_refusal(user, run.view, gate)


def _claimable(run_id: str, user: Any, gate: str) -> tuple[Run, tuple[int, str] | None]:
    """The run whose open `gate` is to be claimed, and whether `user` may not answer it now."""
    run = _open_gate_run(run_id, gate)
    return run, answer_refusal(user, run.view, gate)


def _run(run_id: str) -> Run:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise HttpError(404, f"no run {run_id!r}")
    return run


def _known_query(request: HttpRequest, known: Any) -> None:
    """A query parameter the operation does not read is a mistake (a typo filters nothing), and so is one given
    twice (which would count?): say which."""
    unknown = sorted(set(request.GET) - set(known))
    if unknown:
        raise HttpError(
            400, f"unknown query parameter {', '.join(repr(u) for u in unknown)} (this call reads: {', '.join(known)})"
        )
    repeated = sorted(name for name, values in request.GET.lists() if len(values) > 1)
    if repeated:
        raise HttpError(
            400,
            f"query parameter {', '.join(repr(r) for r in repeated)} given more than once; give "
            "each at most once (statuses go comma-separated in one `status`)",
        )


def _blank_answer(workflow: str, gate: str, event: str, body: dict[str, Any]) -> str | None:
    """A required text field of the answer that is only whitespace (engine/core/blank.py), in words, or None."""
    loaded = workflows().find(workflow)
    definition = loaded.machine.gate_event(gate, event) if loaded is not None and loaded.machine else None
    return blank_text(definition.input if definition is not None else None, body)


def _answered(run: Run, gate: str) -> bool:
    """Whether the journal holds an answer to this Gate: then its being closed is a conflict, not a wrong id."""
    return JournalEntry.objects.filter(run_id=run.id, kind="gate", entry__gate=gate).exists()


def _json_body(request: HttpRequest) -> Any:
    import json

    if not request.body:
        return {}
    try:
        return json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as err:
        raise HttpError(400, f"the body is not JSON: {err}") from err


async def _host() -> Any:
    try:
        return await ready_host()
    except NoHost as err:
        raise HttpError(503, str(err)) from err
