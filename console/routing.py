"""The Console's websockets: one per open live page."""
from django.urls import path

from .inbox_live import GateCountConsumer, InboxConsumer
from .live import RunConsumer, WorkflowConsumer
from .timeline_live import TimelineConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/timeline/", TimelineConsumer.as_asgi()),
    path("ws/workflows/<str:name>/", WorkflowConsumer.as_asgi()),
    path("ws/gates/", InboxConsumer.as_asgi()),
    path("ws/gates/count/", GateCountConsumer.as_asgi()),
]
