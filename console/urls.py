"""The Console's addresses: users bookmark and share them, so they are part of the product."""
from django.urls import path

from console import feed_views, folds, forkviews, inbox_views, views

app_name = "console"
urlpatterns = [
    path("", views.home, name="home"),
    path("workflows/<str:name>/", views.workflow, name="workflow"),
    path("workflows/<str:name>/graph.svg", views.workflow_graph, name="workflow-graph"),
    path("workflows/<str:name>/runs/", views.start_run, name="start"),
    path("workflows/<str:name>/graph/folds/", folds.graph_folds, name="graph-folds"),
    path("workflows/<str:name>/machines/<path:invokes>/", folds.child_machine_page, name="child-machine"),
    path("runs/", views.runs, name="runs"),
    path("runs/compare/", forkviews.compare, name="compare"),
    path("runs/import/", forkviews.import_runs, name="import"),
    path("gates/", inbox_views.inbox, name="gates"),
    path("gates/answer/", inbox_views.answer, name="gates-answer"),
    path("runs/<str:run_id>/", views.run, name="run"),
    path("runs/<str:run_id>/gates/<path:gate>/", views.answer_gate, name="answer"),
    path("runs/<str:run_id>/cancel/", views.cancel_run, name="cancel"),
    path("runs/<str:run_id>/seats/<path:agent>/take/", views.take_seat, name="seat-take"),
    path("runs/<str:run_id>/seats/<path:agent>/give/", views.give_seat, name="seat-give"),
    path("runs/<str:run_id>/seats/<path:agent>/pick/", views.seat_pick, name="seat-pick"),
    path("runs/<str:run_id>/replay/", views.replay, name="replay"),
    path("runs/<str:run_id>/timeline/", forkviews.timeline, name="timeline"),
    path("runs/<str:run_id>/fork/", forkviews.fork, name="fork"),
    path("runs/<str:run_id>/export.json", forkviews.export, name="export"),
    path("runs/<str:run_id>/steps/", feed_views.run_steps, name="run-steps"),
    path("runs/<str:run_id>/turns/", feed_views.run_turns, name="run-turns"),
    path("runs/<str:run_id>/turns/<int:turn_pk>/lines/", feed_views.turn_lines_view, name="run-turn-lines"),
]
