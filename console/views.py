"""Console views: thin pages over what the engine computes (seats, Menus, warnings); no rules live here."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

import engine.statechart
from engine.loader import load_workflows


def home(request: HttpRequest) -> HttpResponse:
    """Every Workflow of this instance: its seats ("who may send what"), each Agent's Menu, its warnings, and the
    files that were refused or failed to import."""
    found = load_workflows()
    workflows = [
        {
            "name": loaded.name,
            "file": loaded.file,
            "machine": loaded.machine,
            "seats": loaded.machine.seats(),
            "menus": loaded.machine.menus(),
            "warnings": loaded.machine.warnings(),
        }
        for loaded in found.workflows
        if loaded.machine is not None
    ]
    return render(request, "console/home.html", {
        "engine_version": engine.statechart.__version__,
        "folder": found.folder,
        "workflows": workflows,
        "failures": found.failures,
    })
