"""The Console's addresses: users bookmark and share them, so they are part of the product."""

from django.urls import path

from console.views import feeds, folds, forks, inbox, onetap, replay, runs, seats, webhooks, workflows

app_name = "console"
urlpatterns = [
    path("", workflows.home, name="home"),
    path("workflows/<str:name>/", workflows.workflow, name="workflow"),
    path("workflows/<str:name>/graph.svg", workflows.workflow_graph, name="workflow-graph"),
    path("workflows/<str:name>/graph.<str:fmt>", workflows.workflow_graph_export, name="workflow-graph-export"),
    path("workflows/<str:name>/runs/", workflows.start_run, name="start"),
    path("workflows/<str:name>/graph/folds/", folds.graph_folds, name="graph-folds"),
    path("workflows/<str:name>/machines/<path:invokes>/", folds.child_machine_page, name="child-machine"),
    path("runs/", runs.runs, name="runs"),
    path("runs/compare/", forks.compare, name="compare"),
    path("runs/import/", forks.import_runs, name="import"),
    path("gates/", inbox.inbox, name="gates"),
    path("gates/answer/", inbox.answer, name="gates-answer"),
    path("gates/<int:record_id>/link/<str:token>/", onetap.gate_link, name="gate-link"),
    path("webhooks/", webhooks.endpoints, name="webhooks"),
    path("webhooks/<int:endpoint_id>/", webhooks.endpoint_log, name="webhook"),
    path("webhooks/deliveries/<int:delivery_id>/again/", webhooks.send_again, name="webhook-again"),
    path("runs/<str:run_id>/", runs.run, name="run"),
    path("runs/<str:run_id>/gates/<path:gate>/", runs.answer_gate, name="answer"),
    path("runs/<str:run_id>/cancel/", runs.cancel_run, name="cancel"),
    path("runs/<str:run_id>/seats/<path:agent>/take/", seats.take_seat, name="seat-take"),
    path("runs/<str:run_id>/seats/<path:agent>/give/", seats.give_seat, name="seat-give"),
    path("runs/<str:run_id>/seats/<path:agent>/pick/", seats.seat_pick, name="seat-pick"),
    path("runs/<str:run_id>/replay/", replay.replay, name="replay"),
    path("runs/<str:run_id>/timeline/", forks.timeline, name="timeline"),
    path("runs/<str:run_id>/fork/", forks.fork, name="fork"),
    path("runs/<str:run_id>/export.json", forks.export, name="export"),
    path("runs/<str:run_id>/steps/", feeds.run_steps, name="run-steps"),
    path("runs/<str:run_id>/turns/", feeds.run_turns, name="run-turns"),
    path("runs/<str:run_id>/turns/<int:turn_pk>/lines/", feeds.turn_lines_view, name="run-turn-lines"),
]
