"""ASGI entry point (Channels' websocket routing joins it with the Console's live pages)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
application = get_asgi_application()
