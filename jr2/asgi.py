"""ASGI entry point: the Console and the API over HTTP (their static files served by servestatic's middleware, inside
Django's stack, so they carry the security headers too), the Console's live pages over websockets (Channels, checked
against ALLOWED_HOSTS and carrying the Django session), and the MCP servers under /mcp/ (engine/web/mcp/)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
django_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - Django must be set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from console.routing import websocket_urlpatterns  # noqa: E402
from engine.web.mcp.routes import mcp_or  # noqa: E402
from engine.web.middleware import refuse_nul_websockets  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": mcp_or(django_application),
        "websocket": refuse_nul_websockets(
            AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)
