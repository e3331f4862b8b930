"""`jr2 token create | list | revoke`: API tokens, on this project's database. A new token is printed once, on
stdout (what it is for goes to stderr, so `$(jr2 token create ...)` holds the key alone)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from engine.cli.output import Output

__all__ = ["token_arguments", "token"]

#: What a user made by `--create-user` may do: start runs, answer Gates and cancel runs.
PERMISSIONS = ("start_run", "answer_gate", "cancel_run")


def token_arguments(parser: ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    create = actions.add_parser("create", help="create a token for a user and print it once")
    create.add_argument("username")
    create.add_argument("--name", default="", help="a label to tell this token apart")
    create.add_argument(
        "--create-user",
        action="store_true",
        help="create the user if it does not exist, with the permissions to start runs, answer Gates and cancel runs",
    )
    listing = actions.add_parser("list", help="list a user's tokens (never the keys)")
    listing.add_argument("username", nargs="?")
    revoke = actions.add_parser("revoke", help="revoke a token by its prefix (see `jr2 token list`)")
    revoke.add_argument("prefix")


def token(
    out: Output,
    action: str,
    username: str | None = None,
    name: str = "",
    create_user: bool = False,
    prefix: str = "",
    **options: Any,
) -> None:
    if action == "create":
        _create(out, str(username), name, create_user)
    elif action == "list":
        _list(out, username)
    else:
        _revoke(out, prefix)


def _create(out: Output, username: str, name: str, create_user: bool) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from engine.models import ApiToken

    users = get_user_model()
    user = users.objects.filter(username=username).first()
    if user is None and not create_user:
        raise CommandError(
            f'jr2 token: no user "{username}"; create one with `python manage.py '
            f"createsuperuser`, or pass --create-user"
        )
    if user is None:
        user = users.objects.create_user(username=username)
        user.user_permissions.add(
            *Permission.objects.filter(content_type__app_label="engine", codename__in=PERMISSIONS)
        )
        out.stderr.write(
            f'jr2 token: created user "{username}" with the permissions to start runs, answer Gates and cancel runs'
        )
    _, key = ApiToken.issue(user, name)
    out.stderr.write(f'jr2 token: a new token for "{username}" (shown once; keep it secret):')
    out.line(key)


def _list(out: Output, username: str | None) -> None:
    from engine.models import ApiToken

    tokens = ApiToken.objects.select_related("user").order_by("-created_at")
    if username:
        tokens = tokens.filter(user__username=username)
    for token in tokens:
        state = f"revoked {token.revoked_at:%Y-%m-%d}" if token.revoked_at else "active"
        used = f"last used {token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never used"
        out.line(f"{token.prefix}…  {token.user.username:<16} {state:<18} {used}  {token.name}")


def _revoke(out: Output, prefix: str) -> None:
    from django.utils import timezone

    from engine.models import ApiToken

    found = ApiToken.objects.filter(prefix__startswith=prefix, revoked_at__isnull=True)
    if found.count() != 1:
        raise CommandError(
            f"jr2 token revoke: {found.count()} active tokens start with {prefix!r}; give a "
            "longer prefix (see `jr2 token list`)"
        )
    found.update(revoked_at=timezone.now())
    out.line(f"jr2 token: revoked {prefix}…")
