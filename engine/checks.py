"""Configuration mistakes of the engine's settings, as Django system checks with stable ids."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

from engine.runtime.workspace.sandbox import Limits

__all__ = ["workspace_settings"]


@register()
def workspace_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """engine.E001: JR2_WORKSPACE_LIMITS must be a dict of positive integers with known keys; engine.E002:
    JR2_WORKSPACE_ROOT must be set (Agents with a workspace keep their folders under it)."""
    errors = []
    limits = getattr(settings, "JR2_WORKSPACE_LIMITS", None) or {}
    try:
        if not isinstance(limits, dict):
            raise ValueError(f"JR2_WORKSPACE_LIMITS must be a dict; got {type(limits).__name__}")
        Limits.from_mapping(limits)
    except ValueError as err:
        errors.append(
            Error(str(err), hint="Agents with a workspace fault their Turns until it is fixed.", id="engine.E001")
        )
    if not getattr(settings, "JR2_WORKSPACE_ROOT", None):
        errors.append(
            Error(
                "JR2_WORKSPACE_ROOT is empty", hint="Name the folder that holds the runs' workspaces.", id="engine.E002"
            )
        )
    return errors
