"""How an HTTP status from a model API becomes a ProviderError, in words: shared by the providers, each of which
still catches its own SDK's exceptions at its boundary."""

from __future__ import annotations

from engine.runtime.providers.base import ProviderError

__all__ = ["after_retries", "status_error"]


def after_retries(retries: int) -> str:
    return f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""


def status_error(status: int, detail: str, who: str, key_hint: str, after: str) -> ProviderError:
    """`who` names the API ("the Anthropic API", "the local model server at ..."); `key_hint` says what to check
    when the key is refused."""
    if status == 429:
        return ProviderError(f"provider limit: 429 {detail}", retryable=True, status=status)
    if status in (401, 403):
        return ProviderError(f"{who} refused the key ({status}): {detail.rstrip('.')}. {key_hint}", status=status)
    if status >= 500 or status in (408, 409):
        return ProviderError(f"{who} failed ({status}){after}: {detail}", retryable=True, status=status)
    return ProviderError(f"{who} refused the request ({status}): {detail}", status=status)
