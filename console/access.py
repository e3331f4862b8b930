"""Who may do what in the Console: observers read, permitted users act (SPEC.md 6, "Accounts").

Reading needs a logged-in user, or `JR2_CONSOLE_OPEN_READS`; acting needs the runtime's Django permissions, which the
groups "gate-answerers" and "operators" carry (engine/migrations/0002_console_groups.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

__all__ = ["can_read", "can", "readers_only", "needs", "ACTIONS"]

#: What each action needs, and how a refusal names it.
ACTIONS = {
    "answer": ("engine.answer_gate", "answer Gates"),
    "start": ("engine.start_run", "start runs"),
    "cancel": ("engine.cancel_run", "cancel runs"),
    "play": ("engine.play_seat", "play an Agent's seat"),
}


def can_read(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False)) or bool(getattr(settings, "JR2_CONSOLE_OPEN_READS", False))


def can(user: Any, action: str) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and user.has_perm(ACTIONS[action][0])


def readers_only(view: Callable[..., Any]) -> Callable[..., Any]:
    """A page anyone who may read sees; others are sent to the login page."""
    if iscoroutinefunction(view):

        @wraps(view)
        async def async_wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            user = await request.auser()
            if not can_read(user):
                return redirect_to_login(request.get_full_path())
            return await view(request, *args, **kwargs)

        return async_wrapper

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not can_read(request.user):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def needs(user: Any, action: str) -> None:
    """Refuse (403) a user without the action's permission, saying which."""
    if not can(user, action):
        permission, doing = ACTIONS[action]
        who = f'user "{user}"' if getattr(user, "is_authenticated", False) else "an anonymous visitor"
        raise PermissionDenied(f"{who} may not {doing}: it needs the permission {permission}")
