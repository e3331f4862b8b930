"""ASGI entry point: the Console, the API and static files (Channels' websocket routing joins it with the
Console's live pages)."""
import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
application = ASGIStaticFilesHandler(get_asgi_application())
