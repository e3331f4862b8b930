"""ASGI entry point: the Console and the API over HTTP (their static files served by servestatic's middleware, inside
Django's stack, so they carry the security headers too; Django's middleware in its lean shapes, engine/web/
middleware.py), the Console's live pages over websockets (Channels, checked against ALLOWED_HOSTS and carrying the
Django session), and the MCP servers under /mcp/ (engine/web/mcp/)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
django.setup(set_prefix=False)  # as get_asgi_application() does

from engine.web.middleware import LeanAsgiHandler, refuse_nul_websockets  # noqa: E402

django_application = LeanAsgiHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - Django must be set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from console.routing import websocket_urlpatterns  # noqa: E402
from engine.runtime.telemetry.instrument import instrumented_asgi  # noqa: E402
from engine.web.mcp.routes import mcp_or  # noqa: E402

application = instrumented_asgi(
    ProtocolTypeRouter(
        {
            "http": mcp_or(django_application),
            "websocket": refuse_nul_websockets(
                AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
            ),
        }
    )
)
