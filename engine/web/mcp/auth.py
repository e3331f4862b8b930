"""Who calls an MCP server: `Authorization: Bearer <API token>`, the same tokens and checks as the API.

The token is checked by the API's own `TokenAuth` (hashed tokens, constant-time comparison, wrong tokens counted
per address), so an MCP endpoint accepts exactly the tokens the API accepts. The answer is the user, or the HTTP
status and words to refuse with: 401 without a valid token, 403 without the permission, 429 past the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest
from starlette.types import Scope

from engine.web.api import RateLimited, TokenAuth

__all__ = ["Caller", "Refused", "authenticate", "NO_TOKEN"]

NO_TOKEN = (
    "a valid API token is needed: send `Authorization: Bearer <token>` (create one with `jr2 token create <username>`)"
)


@dataclass(frozen=True)
class Refused:
    """An HTTP refusal before any MCP message is read."""

    status: int
    detail: str
    retry_after: int | None = None


@dataclass(frozen=True)
class Caller:
    """The token's user."""

    user: AbstractBaseUser

    @property
    def username(self) -> str:
        return str(self.user.get_username())


def _request(scope: Scope) -> HttpRequest:
    """The bits of the ASGI scope the token check reads (the caller's address, the proxy header)."""
    request = HttpRequest()
    request.META["REMOTE_ADDR"] = (scope.get("client") or ("", 0))[0]
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            request.META["HTTP_X_FORWARDED_FOR"] = value.decode("latin-1")
    request.user = AnonymousUser()
    return request


def bearer(scope: Scope) -> str | None:
    """The token of `Authorization: Bearer <token>`, or None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def _check(scope: Scope, permission: str, doing: str) -> Caller | Refused:
    token = bearer(scope)
    if token is None:
        return Refused(401, NO_TOKEN)
    try:
        user = TokenAuth().authenticate(_request(scope), token)
    except RateLimited as err:
        return Refused(429, str(err), err.retry_after)
    if user is None:
        return Refused(401, NO_TOKEN)
    if permission and not user.has_perm(permission):
        return Refused(403, f'user "{user.get_username()}" may not {doing}: it needs the permission {permission}')
    return Caller(user)


async def authenticate(scope: Scope, permission: str, doing: str) -> Caller | Refused:
    """The caller of an MCP request, or why it is refused. `permission` is "app_label.codename" ("" for none);
    `doing` says in words what it allows ("play an Agent's seat")."""
    return await sync_to_async(_check)(scope, permission, doing)
