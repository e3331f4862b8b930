"""The simulator: `/workflows/<name>/simulate/` plays a run of the Workflow by hand in the user's own Django session,
on a simulated clock, calling no model and running no Effect (console/pages/simulating.py, engine/core/simulation).

Every control is a POST to the same address with an `action`; an htmx request gets the simulator's region back (and
the graph's lit states out of band), any other is redirected to the page (or shown it with the refusal). Nothing
here is stored but the plan in the session: reading rights are enough to simulate.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from console.access import can, needs, readers_only
from console.pages.forms import check, schema_form
from console.pages.simulating import (
    KINDS,
    entry_for,
    find_offer,
    forget_plan,
    keep_plan,
    offer_form,
    plan_of,
    sim_page,
)
from console.pages.states import state_details
from engine.core.journal.scenario_replay import ScenarioDiverged
from engine.core.journal.scenario_replay import from_journal as scenario_of
from engine.core.simulation import (
    Plan,
    PlanError,
    advance,
    advance_to_next_timer,
    from_journal,
    redo,
    reset,
    send,
    simulate,
    undo,
)
from engine.core.workflow import Machine
from engine.models import JournalEntry, Run
from engine.runtime.registry import workflows
from engine.runtime.scenario_files import scenario_folder, write_scenario

__all__ = ["simulate_page", "simulate_run"]

MAX_ADVANCE_MS = 10 * 365 * 24 * 3600 * 1000.0  # ten years of simulated time in one click is plenty


def _machine(name: str) -> Machine:
    loaded = workflows().find(name)
    if loaded is None:
        raise Http404(f'no workflow "{name}"')
    if loaded.machine is None:
        raise Http404(f'workflow "{name}" did not load: {loaded.error}')
    return loaded.machine


def _render(
    request: HttpRequest,
    name: str,
    machine: Machine,
    plan: Plan | None,
    message: str = "",
    door_form: Any = None,
    posted: dict[str, Any] | None = None,
    ok: bool = False,
) -> HttpResponse:
    page = sim_page(machine, plan, posted)
    flash = request.session.pop("jr2.simulate.message", None) if not message else None
    if isinstance(flash, dict):
        message, ok = str(flash.get("text", "")), bool(flash.get("ok"))
    page.update(
        name=name,
        machine=machine,
        message=message,
        message_ok=ok,
        door_form=door_form if door_form is not None else schema_form(machine.door),
        action=reverse("console:simulate", args=[name]),
        states=state_details(machine),
        htmx=bool(request.headers.get("HX-Request")),
        can_save=can(request.user, "start"),
    )
    template = "console/simulate/_sim.html" if request.headers.get("HX-Request") else "console/simulate.html"
    return render(request, template, page)


def _done(
    request: HttpRequest, name: str, machine: Machine, plan: Plan | None, message: str = "", ok: bool = False
) -> HttpResponse:
    """After an action: the region for htmx, else back to the page (the message kept for it)."""
    if request.headers.get("HX-Request"):
        return _render(request, name, machine, plan, message, ok=ok)
    if message:
        request.session["jr2.simulate.message"] = {"text": message, "ok": ok}
    return redirect("console:simulate", name=name)


@readers_only
@require_http_methods(["GET", "POST"])
def simulate_page(request: HttpRequest, name: str) -> HttpResponse:
    machine = _machine(name)
    plan, dropped = plan_of(request, name)
    if request.method == "GET":
        return _render(request, name, machine, plan, dropped)
    action = request.POST.get("action", "")
    if action == "start":
        form = schema_form(machine.door, request.POST)
        values = check(form, machine.door)
        if values is None:
            return _render(request, name, machine, None, "the door input is not valid", door_form=form)
        plan = Plan.new(values)
        try:
            simulate(machine, plan)
        except PlanError as err:
            return _render(request, name, machine, None, str(err), door_form=form)
        keep_plan(request, name, plan)
        return _done(request, name, machine, plan)
    if action == "new":
        forget_plan(request, name)
        return _done(request, name, machine, None)
    if plan is None:
        return _done(request, name, machine, None, "start a simulation first: give the door input")
    return _act(request, name, machine, plan, action)


def _act(request: HttpRequest, name: str, machine: Machine, plan: Plan, action: str) -> HttpResponse:
    message: str | None = None
    try:
        if action == "undo":
            plan = undo(plan)
        elif action == "redo":
            plan, message = redo(machine, plan)
        elif action == "reset":
            plan = reset(plan)
        elif action == "advance":
            ms = _ms(request.POST.get("ms", ""))
            if isinstance(ms, str):
                return _done(request, name, machine, plan, ms)
            plan, _, message = advance(machine, plan, ms)
        elif action == "next-timer":
            plan, _, message = advance_to_next_timer(machine, plan)
        elif action == "send":
            return _send(request, name, machine, plan)
        elif action == "save":
            return _save(request, name, machine, plan)
        else:
            return HttpResponseBadRequest(
                f"unknown action {action!r} (actions: start, send, undo, redo, advance, next-timer, reset, new, save)"
            )
    except PlanError as err:
        message = str(err)
    keep_plan(request, name, plan)
    return _done(request, name, machine, plan, message or "")


def _ms(text: str) -> float | str:
    try:
        ms = float(text)
    except ValueError:
        return f"advance takes a number of ms; got {text[:40]!r}"
    if not 0 < ms <= MAX_ADVANCE_MS:
        return f"advance takes a positive number of ms up to {MAX_ADVANCE_MS:g}; got {ms:g}"
    return ms


def _send(request: HttpRequest, name: str, machine: Machine, plan: Plan) -> HttpResponse:
    """One offered event, with its form's values: the Session takes it, or says why not (nothing changes)."""
    kind, by, event = (request.POST.get(k, "") for k in ("kind", "by", "event"))
    if kind not in KINDS:
        return HttpResponseBadRequest(f"unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    try:
        sim = simulate(machine, plan)
    except PlanError as err:
        return _done(request, name, machine, plan, str(err))
    offer = find_offer(sim, kind, by, event)
    if offer is None:
        return _done(request, name, machine, plan, f'"{event}" from {by} is not offered now; nothing was sent')
    prefix = request.POST.get("prefix", "")
    form = offer_form(offer, int(prefix[1:]) if prefix[1:].isdigit() else 0, request.POST)
    if not form.is_valid():
        key = f"{kind}|{by}|{event}"
        return _render(request, name, machine, plan, f'the input of "{event}" is not valid', posted={key: form})
    try:
        plan, _, refusal = send(machine, plan, entry_for(offer, form.cleaned_input(), sim.session.now))
    except PlanError as err:
        refusal = str(err)
    keep_plan(request, name, plan)
    return _done(request, name, machine, plan, refusal or "")


def _save(request: HttpRequest, name: str, machine: Machine, plan: Plan) -> HttpResponse:
    """Save as scenario: what was done, as `workflows/<name>.scenarios/<scenario>.json` in the scenario format
    (engine/core/scenarios.py), with the expectations the current Machine comes to, and with `allowed` checked, each
    open Turn's Allowed picks after the last step. Needs the right to start runs: it writes into the project."""
    needs(request.user, "start")
    scenario_name = request.POST.get("scenario", "").strip()
    loaded = workflows().find(name)
    assert loaded is not None
    try:
        sim = simulate(machine, plan)
        last = len(sim.session.journal)
        allowed = [(last, t.agent) for t in sim.session.turns] if request.POST.get("allowed") else []
        scenario = scenario_of(machine, name, sim.session.journal, request.POST.get("description", "")[:500], allowed)
        path = write_scenario(scenario_folder(loaded), scenario_name, scenario, bool(request.POST.get("overwrite")))
    except FileExistsError as err:
        return _done(request, name, machine, plan, f'{err}: tick "replace it" to overwrite it')
    except (PlanError, ScenarioDiverged, ValueError) as err:
        return _done(request, name, machine, plan, f"not saved: {err}")
    return _done(
        request, name, machine, plan, f"saved as scenario {scenario_name} ({path.name}); jr2 test replays it", ok=True
    )


@readers_only
@require_POST
def simulate_run(request: HttpRequest, run_id: str) -> HttpResponse:
    """A recorded run's journal up to step `step` (its seq, as the run and replay pages number steps) loaded into
    the simulator of its workflow, to go on from by hand."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id}")
    machine = _machine(run.workflow)
    rows = [{"seq": e.seq, "entry": e.entry} for e in JournalEntry.objects.filter(run=run).order_by("seq")]
    text = request.POST.get("step", "")
    try:
        step = int(text) if text else (rows[-1]["seq"] if rows else 0)
    except ValueError:
        return HttpResponseBadRequest(f"step is a journal step number; got {text[:40]!r}")
    try:
        plan = from_journal(machine, rows, step, {"run": run.id, "step": step})
    except PlanError as err:
        return HttpResponseBadRequest(f"run {run.id} cannot be simulated from step {step}: {err}")
    keep_plan(request, run.workflow, plan)
    return redirect("console:simulate", name=run.workflow)
