"""The login page, rate-limited: failed logins are counted per address and per username (`JR2_RATE_LOGIN`,
failures/seconds, engine/web/ratelimit.py); past the limit a login is refused with 429 and Retry-After before the
password is even checked, until the window ends. Django's own `login()` gives the session a new key."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from engine.web import ratelimit

__all__ = ["LoginView"]


class LoginView(auth_views.LoginView):
    def _keys(self) -> list[tuple[str, str]]:
        username = str(self.request.POST.get("username", ""))[:150].casefold()
        return [("login-ip", ratelimit.client_ip(self.request)), ("login-user", username)]

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        rate = getattr(settings, "JR2_RATE_LOGIN", "10/300")
        wait = max(ratelimit.blocked(scope, who, rate) for scope, who in self._keys())
        if wait:
            context = self.get_context_data(form=self.get_form(), limited=f"Too many failed logins; try again in "
                                                                          f"{wait} s.")
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        rate = getattr(settings, "JR2_RATE_LOGIN", "10/300")
        for scope, who in self._keys():
            ratelimit.failed(scope, who, rate)
        return super().form_invalid(form)
