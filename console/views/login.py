"""The login page, rate-limited: failed logins are counted per address and per username (`JR2_RATE_LOGIN`,
failures/seconds, engine/web/ratelimit.py); past the limit a login is refused with 429 and Retry-After before the
password is even checked, until the window ends. Django's own `login()` gives the session a new key. A one-time
login link (`/login/<key>/`) logs its user in without a password, once."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from engine.models import LoginLink
from engine.web import ratelimit

__all__ = ["LoginView", "link_login"]

log = logging.getLogger("console.login")


class LoginView(auth_views.LoginView):
    def _keys(self) -> list[tuple[str, str]]:
        username = str(self.request.POST.get("username", ""))[:150].casefold()
        return [("login-ip", ratelimit.client_ip(self.request)), ("login-user", username)]

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        rate = getattr(settings, "JR2_RATE_LOGIN", "10/300")
        wait = max(ratelimit.blocked(scope, who, rate) for scope, who in self._keys())
        if wait:
            context = self.get_context_data(
                form=self.get_form(), limited=f"Too many failed logins; try again in {wait} s."
            )
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        rate = getattr(settings, "JR2_RATE_LOGIN", "10/300")
        for scope, who in self._keys():
            ratelimit.failed(scope, who, rate)
        return super().form_invalid(form)


@never_cache
def link_login(request: HttpRequest, key: str) -> HttpResponse:
    """A one-time login link (`jr2 up`'s first start, `jr2 login-link`): logs its user in and goes to the Console,
    once. A used, expired or unknown link says so and changes nothing; each try counts as a failed login."""
    rate = getattr(settings, "JR2_RATE_LOGIN", "10/300")
    address = ratelimit.client_ip(request)
    wait = ratelimit.blocked("login-ip", address, rate)
    if wait:
        response = render(request, "registration/link_refused.html", {"limited": wait}, status=429)
        response["Retry-After"] = str(wait)
        return response
    link = LoginLink.redeem(key) if len(key) <= 64 else None
    if link is None or not link.user.is_active:
        ratelimit.failed("login-ip", address, rate)
        return render(request, "registration/link_refused.html", {}, status=403)
    log.info("login link %s used by %s from %s", link.pk, link.user.get_username(), address)
    login(request, link.user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("console:home")
