"""URL routes: the JSON API under /api/, Django's admin under /admin/, the Console at the root."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import RedirectView

from console.views.login import LoginView, link_login
from engine.web.api import api
from engine.web.metrics import metrics_view


@csrf_exempt
def api_not_found(request: HttpRequest) -> JsonResponse:
    """Under /api/ even a wrong address answers in JSON."""
    return JsonResponse({"detail": f"no API endpoint {request.method} {request.path}; see /api/docs"}, status=404)


urlpatterns = [
    path("favicon.ico", RedirectView.as_view(url="/static/console/favicon.svg", permanent=True)),
    path("api/", api.urls),
    re_path(r"^api/", api_not_found),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("login/<str:key>/", link_login, name="login-link"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("console.urls")),
]
