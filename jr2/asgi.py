"""ASGI entry point: the Console and the API over HTTP (with their static files), the Console's live pages over
websockets (Channels, checked against ALLOWED_HOSTS and carrying the Django session)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
django_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - Django must be set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from console.routing import websocket_urlpatterns  # noqa: E402
from engine.web.middleware import refuse_nul_websockets  # noqa: E402

application = ProtocolTypeRouter({
    "http": ASGIStaticFilesHandler(django_application),
    "websocket": refuse_nul_websockets(
        AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
})
