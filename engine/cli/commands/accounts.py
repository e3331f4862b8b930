"""Who may log in: `jr2 login-link [USERNAME]` (a one-time link for any user, for an admin helping a colleague),
and the first start of `jr2 up` (no user yet: one superuser, and a link that logs it in, so the first page is the
Console, not a login form). The fleet's `jr2 web` and the production settings never make users."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError

from engine.cli.output import Output

__all__ = ["login_link_arguments", "login_link", "first_user_link", "link_url", "FIRST_USER"]

#: The superuser the first start makes; it has no password until someone sets one (`jr2 manage changepassword`).
FIRST_USER = "admin"


def login_link_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("username", nargs="?", help="whose link (default: the only superuser)")
    parser.add_argument(
        "--url", default=None, help="the address the Console is served at (default: $JR2_URL or http://127.0.0.1:8000)"
    )


def link_url(base: str, key: str) -> str:
    return f"{base.rstrip('/')}/login/{key}/"


def login_link(out: Output, username: str | None = None, url: str | None = None, **options: Any) -> None:
    """Print a fresh one-time link (15 minutes) that logs `username` in."""
    import os

    from django.contrib.auth import get_user_model

    from engine.models import LoginLink

    users = get_user_model().objects.filter(is_active=True)
    if username is None:
        supers = list(users.filter(is_superuser=True).order_by("username"))
        if len(supers) != 1:
            names = ", ".join(u.get_username() for u in supers) or "none"
            raise CommandError(f"jr2 login-link: name the user (superusers: {names})")
        user = supers[0]
    else:
        user = users.filter(username=username).first()
        if user is None:
            known = ", ".join(users.order_by("username").values_list("username", flat=True)[:20]) or "none"
            raise CommandError(f'jr2 login-link: no active user "{username}" (users: {known})')
    key = LoginLink.issue(user)
    base = url or os.environ.get("JR2_URL") or "http://127.0.0.1:8000"
    out.stderr.write(f"jr2 login-link: a link that logs {user.get_username()} in once, for 15 minutes:")
    out.line(link_url(base, key))


def first_user_link(role: str, address: str, port: int) -> str | None:
    """On a database with no user, `jr2 up` makes the first superuser and returns the line of its login link;
    `jr2 web`, `jr2 worker` and the production settings (JR2_FIRST_USER off) make none and return what to do."""
    from django.contrib.auth import get_user_model

    from engine.models import LoginLink

    users = get_user_model()
    if users.objects.exists():
        return None
    if role != "up" or not getattr(settings, "JR2_FIRST_USER", True):
        return (
            f"jr2 {role}: no Console user yet: make one with `jr2 manage createsuperuser`, then "
            "`jr2 login-link` prints a link that logs it in (or set JR2_CONSOLE_OPEN_READS=1 to let anyone read "
            "the Console)"
        )
    user = users.objects.create_superuser(FIRST_USER, email="", password=None)
    host = "127.0.0.1" if address in ("0.0.0.0", "::", "") else address
    return f"jr2 up: log in at {link_url(f'http://{host}:{port}', LoginLink.issue(user))}"
