"""API tokens as the API checks them: found by their hash, then trusted for `JR2_TOKEN_CACHE_SECONDS` in this
process, so that a burst of calls with one token reads the database once, not once a call.

    user = trusted(key)        # the token's user from this process's memory, or None: look it up
    user = look_up(key)        # the database: the active token and its active user (its permissions read too)
    forget()                   # after a change here that may revoke a token (the admin's action, a signal)

Revocation is honoured within the cache's time: a token revoked (`jr2 token revoke`, the admin), a user deactivated
or a permission changed in another process is refused at most `JR2_TOKEN_CACHE_SECONDS` (2 s) later, and at once
in the process that changed it (saving or deleting a token, a user, or their groups and permissions empties the
cache). `last_used_at` is written once a minute per token and process, not on every call (`jr2 token list` shows
it to the minute), so an API call through a known token writes nothing.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from engine.models import ApiToken

__all__ = ["trusted", "look_up", "touch", "forget", "LAST_USED_EVERY"]

#: How often a token's `last_used_at` is written, at most (seconds, per process).
LAST_USED_EVERY = 60.0
#: At most this many tokens are kept; past it the cache starts again empty.
MOST = 10_000


@dataclass(frozen=True)
class _Trusted:
    user: Any
    token_id: int
    until: float


_trusted: dict[str, _Trusted] = {}
_used: dict[int, float] = {}


def _seconds() -> float:
    return float(getattr(settings, "JR2_TOKEN_CACHE_SECONDS", 2.0))


def trusted(key: str) -> tuple[Any, int] | None:
    """The user and token id of `key`, checked less than `JR2_TOKEN_CACHE_SECONDS` ago in this process; else None."""
    found = _trusted.get(ApiToken.digest(key))
    if found is None or found.until <= time.monotonic():
        return None
    return found.user, found.token_id


def look_up(key: str) -> tuple[Any, int] | None:
    """The active token `key` and its active user, from the database (the record found by prefix, the hashes
    compared in constant time), its user's permissions read at once so that `has_perm` reads no more; kept for
    `JR2_TOKEN_CACHE_SECONDS`. None for a wrong, revoked or inactive one."""
    digest = ApiToken.digest(key)
    record = next(
        (
            candidate
            for candidate in ApiToken.objects.select_related("user").filter(
                prefix=key[: ApiToken.PREFIX_LENGTH], revoked_at__isnull=True
            )
            if hmac.compare_digest(candidate.key_hash, digest)
        ),
        None,
    )
    if record is None or not record.user.is_active:
        _trusted.pop(digest, None)
        return None
    user = record.user
    user.get_all_permissions()  # ModelBackend keeps them on the user object
    seconds = _seconds()
    if seconds > 0:
        if len(_trusted) >= MOST:
            _trusted.clear()
        _trusted[digest] = _Trusted(user, record.pk, time.monotonic() + seconds)
    return user, record.pk


def due(token_id: int) -> bool:
    """Whether `last_used_at` of the token is to be written now (once a minute per process)."""
    return time.monotonic() - _used.get(token_id, -LAST_USED_EVERY) >= LAST_USED_EVERY


def touch(token_id: int) -> None:
    """Write the token's `last_used_at`, once a minute per process."""
    if not due(token_id):
        return
    _used[token_id] = time.monotonic()
    ApiToken.objects.filter(pk=token_id).update(last_used_at=timezone.now())


def forget(*args: Any, **kwargs: Any) -> None:
    """Trust no token checked before now (a signal receiver too)."""
    _trusted.clear()


def _connect() -> None:
    """Empty the cache when this process saves or deletes a token or a user, or changes whose groups or
    permissions (bulk `update()`s send no signal: their callers call `forget`)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db.models.signals import m2m_changed, post_delete, post_save

    user = get_user_model()
    for model in (ApiToken, user, Group):
        post_save.connect(forget, sender=model, dispatch_uid=f"jr2-tokens-save-{model.__name__}")
        post_delete.connect(forget, sender=model, dispatch_uid=f"jr2-tokens-delete-{model.__name__}")
    for through in (user.groups.through, user.user_permissions.through, Group.permissions.through):
        m2m_changed.connect(forget, sender=through, dispatch_uid=f"jr2-tokens-m2m-{through.__name__}")


_connect()
