"""The Console's websockets: one per open live page."""
from django.urls import path

from .live import RunConsumer, WorkflowConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
    path("ws/workflows/<str:name>/", WorkflowConsumer.as_asgi()),
]
