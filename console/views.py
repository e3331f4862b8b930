"""Console views. For now one page: what this instance is; workflows, runs and replay come with later work."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

import engine.statechart


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "console/home.html", {"engine_version": engine.statechart.__version__})
