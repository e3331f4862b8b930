"""Which provider answers a model string: `provider_for("anthropic/claude-haiku-5-5")`.

The prefix before the first "/" picks a Provider class by dotted path from the setting `JR2_PROVIDERS` (a dict of
prefix -> dotted path; when set, it replaces the default below). Classes are imported the first time their prefix is
asked for, so importing `engine.runtime.providers` imports no SDK: a deployment with only scripted models needs neither
`anthropic` nor `openai` to work. One instance per prefix is kept, since each holds its SDK's connection pool.
"""

from __future__ import annotations

import importlib
import threading

from engine.runtime.providers._config import setting_dict
from engine.runtime.providers.base import (
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    ToolCall,
    TurnView,
    Usage,
    parse_arguments,
)

__all__ = [
    "provider_for",
    "split_model",
    "reset_providers",
    "aclose_all",
    "DEFAULT_PROVIDERS",
    "ModelReply",
    "ModelRequest",
    "Provider",
    "ProviderError",
    "ToolCall",
    "TurnView",
    "Usage",
    "parse_arguments",
]

DEFAULT_PROVIDERS: dict[str, str] = {
    "anthropic": "engine.runtime.providers.anthropic.AnthropicProvider",
    "local": "engine.runtime.providers.local.LocalProvider",
    "script": "engine.runtime.providers.script.ScriptProvider",
    "human": "engine.runtime.providers.human.HumanProvider",
    "mcp": "engine.runtime.providers.mcp_seat.McpSeatProvider",
}

_instances: dict[str, Provider] = {}
_lock = threading.Lock()


def split_model(model: str) -> tuple[str, str]:
    """`"<prefix>/<model id>"` as (prefix, model id). The id may itself hold "/" (`local/Qwen/Qwen3-8B`)."""
    if not isinstance(model, str) or "/" not in model:
        raise ProviderError(f"model {model!r} must be '<provider>/<model id>', e.g. 'anthropic/claude-haiku-5-5'")
    prefix, model_id = model.split("/", 1)
    if not prefix or not model_id:
        raise ProviderError(f"model {model!r} must be '<provider>/<model id>', with neither part empty")
    return prefix, model_id


def provider_for(model: str) -> Provider:
    """The Provider instance for `model`'s prefix (created on first use, then shared)."""
    prefix, _ = split_model(model)
    with _lock:
        provider = _instances.get(prefix)
        if provider is None:
            provider = _instances[prefix] = _load(prefix, model)
        return provider


def reset_providers() -> None:
    """Forget every instance, so the next `provider_for` reads the settings again (for tests). Connections are not
    closed: call `aclose_all()` first from the event loop that used them."""
    with _lock:
        _instances.clear()


async def aclose_all() -> None:
    """Close every provider's connections and forget the instances (at shutdown)."""
    with _lock:
        providers = list(_instances.values())
        _instances.clear()
    for provider in providers:
        await provider.aclose()


def _load(prefix: str, model: str) -> Provider:
    paths = setting_dict("JR2_PROVIDERS", DEFAULT_PROVIDERS)
    path = paths.get(prefix)
    if path is None:
        known = ", ".join(sorted(paths)) or "none"
        raise ProviderError(
            f'no provider for the prefix "{prefix}" of model "{model}": the known prefixes are '
            f"{known} (setting JR2_PROVIDERS)"
        )
    module_name, _, class_name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        raise ProviderError(
            f'the provider "{prefix}" names {path!r} in JR2_PROVIDERS, which cannot be imported: {err}'
        ) from err
    if not (isinstance(cls, type) and issubclass(cls, Provider)):
        raise ProviderError(
            f'the provider "{prefix}" names {path!r} in JR2_PROVIDERS, which is not a Provider subclass'
        )
    instance: Provider = cls()
    return instance
