"""The providers' settings: a Django setting when it is set, else the environment variable of the same name, else
the default. Read at call time, so a test's settings override (or a changed environment) is seen at once; and read
without requiring Django to be configured, so a provider also works from a plain script.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

from engine.runtime.providers.base import ProviderError

__all__ = [
    "setting",
    "setting_str",
    "setting_int",
    "setting_float",
    "setting_dict",
    "max_retries",
    "timeout",
    "connect_timeout",
]

DEFAULT_MAX_RETRIES = 3
DEFAULT_TIMEOUT = 600.0
#: Seconds to open a connection: a server that is down or unreachable is known long before a reply would be late.
CONNECT_TIMEOUT = 10.0

N = TypeVar("N", int, float)


def setting(name: str) -> Any:
    """The value of `name`: the Django setting if it is set and not None, else the environment variable, else None."""
    try:
        from django.conf import settings

        if settings.configured:
            value = getattr(settings, name, None)
            if value is not None:
                return value
    except ImportError:
        pass
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def setting_str(name: str, default: str) -> str:
    value = setting(name)
    return default if value is None else str(value)


def setting_int(name: str, default: int) -> int:
    return _number(name, default, int, "a whole number")


def setting_float(name: str, default: float) -> float:
    return _number(name, default, float, "a number of seconds")


def _number(name: str, default: N, convert: Callable[[Any], N], what: str) -> N:
    """A number setting read with `convert`; one it cannot read is refused, saying it must be `what`."""
    value = setting(name)
    if value is None:
        return default
    try:
        return convert(value)
    except (TypeError, ValueError):
        raise ProviderError(f"{name} must be {what}; got {value!r}") from None


def setting_dict(name: str, default: dict[str, str]) -> dict[str, str]:
    """A dict setting; from the environment it is JSON."""
    value = setting(name)
    if value is None:
        return dict(default)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ProviderError(f"{name} must be a JSON object of prefix -> dotted path; got {value!r}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"{name} must be a dict of prefix -> dotted path; got {type(value).__name__}")
    return {str(k): str(v) for k, v in value.items()}


def max_retries() -> int:
    """How many times the SDK retries a 429, a 5xx or a dropped connection, with backoff, before we give up."""
    return max(0, setting_int("JR2_PROVIDER_MAX_RETRIES", DEFAULT_MAX_RETRIES))


def timeout() -> float:
    """Seconds one model request may take (long: a model writing many tokens is slow, not stuck)."""
    return setting_float("JR2_PROVIDER_TIMEOUT", DEFAULT_TIMEOUT)


def connect_timeout(total: float) -> float:
    return min(CONNECT_TIMEOUT, total)
