"""The Console's websockets: one per open live page."""

from django.urls import path

from console.consumers.gates import GateCountConsumer, InboxConsumer
from console.consumers.run import RunConsumer
from console.consumers.runs import RunsConsumer
from console.consumers.timeline import TimelineConsumer
from console.consumers.workflow import WorkflowConsumer

websocket_urlpatterns = [
    path("ws/runs/", RunsConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/timeline/", TimelineConsumer.as_asgi()),
    path("ws/workflows/<str:name>/", WorkflowConsumer.as_asgi()),
    path("ws/gates/", InboxConsumer.as_asgi()),
    path("ws/gates/count/", GateCountConsumer.as_asgi()),
]
