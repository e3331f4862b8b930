"""The Anthropic provider's prompt caching on a long Turn: one Turn of 20 picks against the local fake server.

Part 4 of `python -m bench.runtime` (`make bench-runtime`; alone: `python -m bench.runtime --only cache`). A run of
the `drafts` workflow below gives its Agent (`anthropic/claude-bench`, the real provider and the official SDK over
HTTP) one Turn in which it picks `draft` 19 times, each answered at once, then `finish`: 20 requests, each the
whole conversation so far. The fake model server (tests/fakes/model_server.py with its prompt cache,
tests/fakes/prompt_cache.py) computes from the breakpoints of each request what the cache holds and reports
`input_tokens`, `cache_read_input_tokens` and `cache_creation_input_tokens` as the API does.

"after" is what the server reported for the requests the provider sent (breakpoints on the tools, the system
prompt and the last block of the conversation). "before" is the same requests with the conversation's breakpoint
taken out (what the provider sent before it had one: tools and system only), read through a fresh cache. Checked:
every request carries at most 4 breakpoints, and each request's conversation starts with the previous request's
conversation in the same bytes (`cache_control` aside).
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["PICKS", "measure_cache", "report_cache"]

PICKS = 20
MODEL = "anthropic/claude-bench"

#: Anthropic's prices relative to base input tokens: a cache write costs 1.25x (5-minute cache), a read 0.1x.
WRITE_PRICE, READ_PRICE = 1.25, 0.1


def drafts_machine() -> Any:
    from pydantic import BaseModel, Field

    from engine import agent, answer, define_event, jr2_setup

    class Note(BaseModel):
        note: str = Field(description="One paragraph of the draft.")

    class Empty(BaseModel):
        pass

    draft = define_event(name="draft", input=Note, description="Add one paragraph to the draft; it stays with you.")
    finish = define_event(name="finish", input=Empty, description="Hand in the draft.")
    return jr2_setup(
        events=[draft, finish],
        actors={"drafter": agent(model=MODEL, instructions="You write a long draft, one paragraph per pick.")},
    ).create_machine(
        {
            "id": "drafts",
            "initial": "drafting",
            "states": {
                "drafting": {
                    "invoke": {"src": "drafter", "input": {"prompt": "Write the design notes, then finish."}},
                    "on": {
                        "draft": {"actions": answer(lambda event: f"Kept: {event.note[:40]}")},
                        "finish": "done",
                    },
                },
                "done": {"type": "final"},
            },
        }
    )


def _responder(body: Any) -> Any:
    from tests.fakes.model_server import tool_call

    picked = sum(
        1
        for message in body.get("messages", [])
        for block in (message.get("content") if isinstance(message.get("content"), list) else [])
        if isinstance(block, dict) and block.get("type") == "tool_use"
    )
    if picked < PICKS - 1:
        paragraph = f"Paragraph {picked + 1}: " + "the design keeps every control decision in the Machine. " * 8
        return tool_call("draft", {"note": paragraph}, usage={"output": 120})
    return tool_call("finish", {}, usage={"output": 10})


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _without_conversation_breakpoint(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "messages": _strip(body["messages"])}


def _totals(usages: list[dict[str, int]]) -> dict[str, int]:
    keys = ("input", "cache_read", "cache_write")
    return {k: sum(u[k] for u in usages) for k in keys}


def check_requests(bodies: list[dict[str, Any]], wrong: type[Exception]) -> None:
    """At most 4 breakpoints; each conversation extends the previous one in the same bytes."""
    from tests.fakes.prompt_cache import check_breakpoints

    for number, body in enumerate(bodies, 1):
        if check_breakpoints(body) != 3:
            raise wrong(f"request {number} carries {check_breakpoints(body)} breakpoints, not 3")
        if number > 1:
            before, now = _strip(bodies[number - 2]["messages"]), _strip(body["messages"])
            if json.dumps(now[: len(before)]) != json.dumps(before):
                raise wrong(f"request {number} changed the bytes of the conversation before it")


async def measure_cache(wrong: type[Exception]) -> dict[str, Any]:
    """Run the 20-pick Turn through a Host against the fake server; tokens before and after."""
    from django.conf import settings

    from engine.runtime.host import Host
    from engine.runtime.providers import aclose_all, reset_providers
    from tests.fakes.model_server import ModelServer
    from tests.fakes.prompt_cache import PromptCache

    saved = (
        settings.JR2_SCRIPTED,
        getattr(settings, "JR2_ANTHROPIC_BASE_URL", None),
        os.environ.get("ANTHROPIC_API_KEY"),
    )
    with ModelServer(responder=_responder, prompt_cache=True) as server:
        settings.JR2_SCRIPTED = False
        settings.JR2_ANTHROPIC_BASE_URL = server.url
        os.environ["ANTHROPIC_API_KEY"] = "bench-key"
        reset_providers()
        host = Host({"drafts": drafts_machine()}, owner="bench-cache")
        await host.start()
        try:
            run_id = await host.start_run("drafts", None)
            task = host.drivers[run_id].task
            if task is not None:
                await task
            run, recorded = await host.db(_run_status, run_id)
        finally:
            await host.stop()
            await aclose_all()
            settings.JR2_SCRIPTED, settings.JR2_ANTHROPIC_BASE_URL = saved[0], saved[1]
            if saved[2] is None:
                os.environ.pop("ANTHROPIC_API_KEY", None)
            else:
                os.environ["ANTHROPIC_API_KEY"] = saved[2]
            reset_providers()
        if run != "done":
            raise wrong(f"the drafts run ended {run}, not done")
        bodies = [r.body for r in server.requests]
    if len(bodies) != PICKS:
        raise wrong(f"the 20-pick Turn made {len(bodies)} requests")
    check_requests(bodies, wrong)
    after_cache = PromptCache()
    after = [_as_dict(after_cache.usage(b)) for b in bodies]
    before_cache = PromptCache()
    before = [_as_dict(before_cache.usage(_without_conversation_breakpoint(b))) for b in bodies]
    totals = _totals(after)
    if recorded != {**totals, "turns": 1}:
        raise wrong(f"the Turn records {recorded}, the server reported {totals} in one Turn")
    return {"requests": len(bodies), "before": _totals(before), "after": totals, "per_request": after}


def _as_dict(usage: Any) -> dict[str, int]:
    return {"input": usage.input, "cache_read": usage.cache_read, "cache_write": usage.cache_write}


def _run_status(run_id: str) -> tuple[str, dict[str, int]]:
    """The run's status and what its Turn records say the provider read from the server's usage."""
    from engine.models import Run, TurnRecord

    turns = list(TurnRecord.objects.filter(run_id=run_id))
    recorded = {
        "input": sum(t.input_tokens for t in turns),
        "cache_read": sum(t.cache_read_tokens for t in turns),
        "cache_write": sum(t.cache_write_tokens for t in turns),
        "turns": len(turns),
    }
    return str(Run.objects.get(id=run_id).status), recorded


def _cost(totals: dict[str, int]) -> float:
    return totals["input"] + WRITE_PRICE * totals["cache_write"] + READ_PRICE * totals["cache_read"]


def report_cache(cache: dict[str, Any]) -> None:
    print(f"\n### 4. Prompt caching on a {PICKS}-pick Turn (Anthropic provider, fake server's cache)\n")
    print("| breakpoints | input at full price | read from the cache | written to the cache | cost, in input tokens |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for key, what in (("before", "tools + system"), ("after", "tools + system + last block")):
        t = cache[key]
        print(f"| {what} | {t['input']:,} | {t['cache_read']:,} | {t['cache_write']:,} | {_cost(t):,.0f} |")
    print(
        f"\nCost counts a cache write at {WRITE_PRICE}x and a read at {READ_PRICE}x the price of an input token "
        "(Anthropic's 5-minute cache)."
    )
