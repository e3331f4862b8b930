"""The Turn loop: one task per open Agent Turn, speaking the Session's outputs to a model and its tool calls back as
picks (SPEC.md 4, "The Turn protocol with a model").

Each request carries the Agent's system prompt, its Menu as the tools block (the same bytes on every request of the
slot) and the conversation so far; each tool call is refused here when it is not on the Menu or its arguments are
not a JSON object, else it goes to the run as a pick and its answer comes back as the tool result. An outstanding
pick's answer is awaited before the model is asked again. An Agent with a workspace also has the workspace tools
after its Menu; their calls are answered here (engine/runtime/workspace/tools.py), never reach the run as picks, and
are recorded as messages of kind "workspace". `engine.core.turn_policy` decides re-prompts, rerolls and
faults. Everything the model is sent or says is recorded before the next thing happens, so a restarted host can
take the Turn up from its recorded conversation: a tool call recorded but not yet delivered is delivered, and a
request that had no answer is asked again. A loop reaches its run only through `TurnDriver` (the members of the
driver it uses), so this module never imports the driver.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from typing import Any, Protocol

from engine.core.prompts import allowed_line, user_message
from engine.core.session import Session
from engine.core.turn_policy import TurnPolicy, TurnWatch
from engine.models import ModelCall
from engine.runtime import store
from engine.runtime.conversation import Conversation
from engine.runtime.players import Player
from engine.runtime.providers import ModelReply, ModelRequest, ProviderError, TurnView, provider_for, split_model
from engine.runtime.providers.human import SeatGivenBack
from engine.runtime.waiting import Wake
from engine.runtime.workspace import tools as workspace_tools
from engine.runtime.workspace.sandbox import Workspace

__all__ = ["TurnLoop", "TurnDriver"]

log = logging.getLogger("engine.runtime")

#: After this long (seconds) a model request that has not been answered is recorded as in flight on its own.
IN_FLIGHT_AFTER = 0.05


class TurnDriver(Protocol):
    """What a Turn loop needs of the driver of its run (engine/runtime/driver.py): the run's names and Session,
    its inbox and its records, the Turn's player and Dials as they are now, the model calls' numbers, the Agent's
    workspace and fresh conversations (a reroll)."""

    run_id: str
    workflow: str
    session: Session

    def submit(self, kind: str, **args: Any) -> asyncio.Future[Any]: ...

    async def write(self, ops: list[store.Op]) -> None: ...

    def defer(self, ops: list[store.Op]) -> None: ...

    def dials(self, turn: str) -> dict[str, Any]: ...

    def player_of(self, turn: str) -> Player | None: ...

    def next_call_seq(self) -> int: ...

    def workspace_of(self, agent: str) -> Workspace | None: ...

    def new_conversation(self, base: str, agent: str | None = None) -> Conversation: ...

    def nudge(self) -> None: ...


class _Ended(Exception):
    """The Turn ended (its state was left, or it faulted): the loop stops."""


class TurnLoop:
    """Drives one Turn of `agent` until its state is left or it faults."""

    def __init__(
        self,
        driver: TurnDriver,
        turn: str,
        agent: str,
        player: Player,
        conversation: Conversation,
        prompt: str,
        system: str,
        notices: tuple[Any, ...],
        policy: TurnPolicy | None = None,
        pending_call: str = "",
    ) -> None:
        self.driver = driver
        self.turn = turn
        self.agent = agent
        self.player = player
        self.conversation = conversation
        self.prompt = prompt
        self.system = system
        self.notices = notices
        self.policy = policy or TurnPolicy()
        self.closed = False
        self.pending_call = pending_call
        self._earlier: list[str] = []
        self._wake = Wake()
        self._in_model = False
        self._asking = False
        #: Waiting for its outstanding pick's answer, nothing else to do: the run may be parked (parking.py).
        self.idle = False
        self.task: asyncio.Task[None] | None = None
        self.workspace: Workspace | None = None

    # -- the driver's side -------------------------------------------------------------------------------------

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run(), name=f"turn {self.turn}")

    def stop(self) -> None:
        """The Turn ended: stop at the next step; a model call in flight is abandoned."""
        self.closed = True
        self._wake.set()
        if self._in_model and self.task is not None:
            self.task.cancel()

    def wake(self) -> None:
        """The run committed something this loop may be waiting on (its outstanding pick's answer)."""
        self._wake.set()

    @property
    def answers(self) -> list[str]:
        """The answers and refusals so far in this Turn, oldest first: the tool results of its conversation."""
        return self._earlier + [
            str(block.get("content", ""))
            for m in self.conversation.messages
            if m.get("turn") == self.turn
            for block in m["content"]
            if block.get("type") == "tool_result"
        ]

    def reads_allowed_later(self) -> bool:
        """True while a change of the Allowed picks is not written into the conversation: the model was sent the
        conversation and has not replied, or calls of its reply are not answered yet. What it reads next (a tool
        result, a refusal, a re-prompt) ends with the Allowed picks read when that is written; a message written
        now would stand before a reply that never saw it, or after answers that are newer than it."""
        return self._asking or not self.conversation.waits_for_model() or bool(self.conversation.unanswered_calls())

    # -- the loop ----------------------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            self.workspace = self.driver.workspace_of(self.agent)
            await self._run(self.policy.watch())
        except (_Ended, asyncio.CancelledError):
            pass
        except Exception as err:
            log.exception("Turn %s of run %s crashed", self.turn, self.driver.run_id)
            await self._fault(f"the Turn loop failed: {type(err).__name__}: {err}")
        finally:
            await asyncio.shield(self.driver.write([]))  # what this Turn recorded last is not left unwritten

    async def _run(self, watch: TurnWatch) -> None:
        while not self.closed:
            calls = self.conversation.unanswered_calls()
            if calls:
                waited = ""
                for call in calls:
                    if waited and call.get("id") != self.pending_call:
                        await self._refuse(
                            str(call.get("id", "")),
                            f'not delivered: you made this call while "{waited}" was outstanding; '
                            "call one tool at a time and wait for its answer",
                        )
                        continue
                    done = await self._handle_call(call, watch)
                    if done == "rerolled":
                        break
                    if done == "waited":
                        waited = str(call.get("name", ""))
                continue
            if not self.conversation.waits_for_model():
                verdict = watch.reply_without_pick(self._allowed())
                if verdict.action == "fault":
                    await self._fault(f"{verdict.reason}; the Allowed picks were {list(self._allowed()) or 'none'}")
                    return
                await self._write("user", "reprompt", [{"type": "text", "text": verdict.message}])
            reply = await self._ask()
            if reply is None:
                return

    async def _ask(self) -> ModelReply | None:
        """Send the conversation to the model. The request and the reply are recorded with the run's next commit
        (the pick their first call makes, usually): one transaction per pick. A request still unanswered after
        IN_FLIGHT_AFTER seconds is committed at once, so a long model call shows as in flight. A host that stops
        before the reply is committed asks again from the recorded conversation."""
        player = self._player()
        _, model_id = split_model(player.model)
        tools = workspace_tools.tools_json(self.driver.session.menu_json(self.agent), self.workspace is not None)
        self._asking = True
        request = ModelRequest(
            model=model_id,
            system=self.system,
            tools_json=tools,
            messages=self.conversation.sent(),
            dials=self.driver.dials(self.turn),
            view=self._view(),
        )
        seq = self.driver.next_call_seq()
        record = {
            "model": player.model,
            "declared": player.declared,
            "system": self.system,
            "tools_sha256": hashlib.sha256(tools.encode()).hexdigest(),
            "dials": dict(request.dials),
            "conversation": self.conversation.id,
        }
        self.driver.defer(
            [store.CallStarted(seq, self.turn, player.model, player.scripted, record, len(request.messages))]
        )
        if self.closed:
            raise _Ended()
        started = time.perf_counter()
        self._in_model = True
        call = asyncio.ensure_future(provider_for(player.model).complete(request))
        try:
            if not (await asyncio.wait({call}, timeout=IN_FLIGHT_AFTER))[0]:
                await self.driver.write([])
            reply = (await call).without_nul()
        except SeatGivenBack:
            self._in_model = False
            await self.driver.write(
                [
                    store.CallFinished(
                        seq,
                        self.turn,
                        ModelCall.Status.INTERRUPTED,
                        error="the person gave the seat back; the model is asked",
                        latency_ms=_ms(started),
                    )
                ]
            )
            return await self._ask()
        except ProviderError as err:
            self._in_model = self._asking = False
            await self.driver.write(
                [store.CallFinished(seq, self.turn, ModelCall.Status.FAILED, error=str(err), latency_ms=_ms(started))]
            )
            await self._fault(str(err))
            return None
        except asyncio.CancelledError:
            call.cancel()
            self._in_model = False
            await asyncio.shield(
                self.driver.write(
                    [
                        store.CallFinished(
                            seq,
                            self.turn,
                            ModelCall.Status.INTERRUPTED,
                            error="the Turn ended while the model was asked",
                            latency_ms=_ms(started),
                        )
                    ]
                )
            )
            raise
        self._in_model = False
        finished = store.CallFinished(
            seq,
            self.turn,
            ModelCall.Status.DONE,
            response=dict(reply.response),
            tool_calls=[c.to_json() for c in reply.tool_calls],
            stop_reason=reply.stop_reason,
            usage=reply.usage.to_json(),
            latency_ms=_ms(started),
        )
        message = reply.message()
        if not message["content"]:
            message["content"] = [{"type": "text", "text": ""}]
        recorded = self.conversation.add(self.turn, "assistant", "reply", message["content"])
        self._asking = False
        self.driver.defer([finished, recorded])
        if self.closed:
            raise _Ended()
        return reply

    async def _handle_call(self, call: dict[str, Any], watch: TurnWatch) -> str:
        """One tool call: refused here if it is not a pick at all, else delivered as a pick and answered. Returns
        "waited" when the pick was outstanding (its answer was awaited), "rerolled" when the Turn started over on a
        fresh conversation, else ""."""
        name, call_id = str(call.get("name", "")), str(call.get("id", ""))
        if self.closed:
            raise _Ended()
        if call_id and call_id == self.pending_call:
            await self._wait_for_answer(call_id)
            return "waited"
        menu = self.driver.session.menu_names(self.agent)
        arguments = call.get("input") if "raw" not in call else None
        if self.workspace is not None and name in workspace_tools.TOOL_NAMES:
            return await self._workspace_call(call_id, name, arguments, call, watch)
        if name not in menu:
            tools = [*menu, *(workspace_tools.TOOL_NAMES if self.workspace is not None else ())]
            await self._refuse(
                call_id, f'"{name}" is not one of your tools (your tools: {", ".join(tools)}); nothing was delivered.'
            )
            return ""
        if not isinstance(arguments, dict):
            await self._refuse(
                call_id,
                f'the arguments of "{name}" are not a JSON object '
                f"({call.get('raw', '')!r:.200}); nothing was delivered. Call it again with a "
                "JSON object that fits its schema.",
            )
            return ""
        if await self._ran_away(watch, call_id, name, arguments, "nothing was delivered."):
            return "rerolled"
        result = await self.driver.submit(
            "pick", agent=self.agent, event=name, params=arguments, call=call_id, turn=self.turn
        )
        watch.result(result)
        if result.outcome == "ended":
            raise _Ended()
        if result.outcome == "outstanding":
            self.pending_call = call_id
            await self._wait_for_answer(call_id)
            return "waited"
        return ""

    async def _workspace_call(
        self, call_id: str, name: str, arguments: Any, call: dict[str, Any], watch: TurnWatch
    ) -> str:
        """A workspace tool call: answered here, recorded as a "workspace" message, never a pick. It counts
        toward the Turn's tool calls like a pick, so a model that loops on its files is rerolled too. Its answer
        ends with the Allowed picks, as every answer does: a change of them may be waiting for it."""
        if self.workspace is None:
            raise _Ended()
        if not isinstance(arguments, dict):
            text, error = (
                (f'the arguments of "{name}" are not a JSON object ({call.get("raw", "")!r:.200}); nothing was done.'),
                True,
            )
        else:
            if await self._ran_away(watch, call_id, name, arguments, "nothing was done."):
                return "rerolled"
            text, error = await workspace_tools.run_tool(self.workspace, name, arguments)
        if self.closed:
            raise _Ended()
        await self._write(
            "user",
            "workspace",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": f"{text}\n\n{allowed_line(self._allowed())}",
                    "is_error": error,
                }
            ],
        )
        return ""

    async def _ran_away(
        self, watch: TurnWatch, call_id: str, name: str, arguments: dict[str, Any], nothing: str
    ) -> bool:
        """The runaway check (engine/core/turn_policy.py) of a pick or a workspace call, before it is carried out:
        False to carry it out; True when it was refused and the Turn rerolled. A runaway after a reroll faults the
        Turn, and the loop ends. `nothing` says what the refusal left undone."""
        verdict = watch.call(name, arguments)
        if verdict is None:
            return False
        await self._refuse(call_id, f"{verdict.reason}; {nothing}")
        if verdict.action == "fault":
            await self._fault(verdict.reason)
            raise _Ended()
        await self._reroll(verdict.reason)
        return True

    async def _wait_for_answer(self, call_id: str) -> None:
        """Until the conversation holds the tool result of `call_id` (level-triggered: whatever order the run's
        task and this loop ran in, the answer is found once it is there)."""
        while not any(
            block.get("type") == "tool_result" and block.get("tool_use_id") == call_id
            for m in self.conversation.messages
            for block in m["content"]
        ):
            if self.closed:
                raise _Ended()
            self._wake.clear()
            self.idle = True
            self.driver.nudge()  # the run's task looks again whether it may park now
            try:
                await self._wake.wait()
            finally:
                self.idle = False
        self.pending_call = ""

    async def _refuse(self, call_id: str, why: str) -> None:
        text = f"{why}\n\n{allowed_line(self._allowed())}"
        await self._write(
            "user", "refusal", [{"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": True}]
        )

    async def _reroll(self, reason: str) -> None:
        """A runaway Turn starts again on a fresh conversation with the same prompt."""
        fresh = self.driver.new_conversation(f"{self.conversation.id}~reroll", self.agent)
        self._earlier = self.answers
        self.conversation = fresh
        message = user_message(self.prompt, self._allowed(), self.notices)
        await self.driver.write(
            [
                store.TurnChanged(self.turn, conversation=fresh.id),
                fresh.add(
                    self.turn, "user", "prompt", [{"type": "text", "text": f"({reason}: starting again)\n\n{message}"}]
                ),
            ]
        )

    async def _fault(self, reason: str) -> None:
        if not self.closed:
            self.closed = True
            await self.driver.submit("fault", agent=self.agent, reason=reason, turn=self.turn)

    async def _write(self, role: str, kind: str, content: list[dict[str, Any]]) -> None:
        await self.driver.write([self.conversation.add(self.turn, role, kind, content)])

    def _allowed(self) -> tuple[str, ...]:
        return tuple(self.driver.session.allowed_picks(self.agent))

    def _view(self) -> TurnView:
        return TurnView(
            agent=self.agent,
            turn=self.turn,
            prompt=self.prompt,
            menu=tuple(self.driver.session.menu(self.agent)),
            allowed_picks=self._allowed(),
            answers=tuple(self.answers),
            notices=self.notices,
            workflow=self.driver.workflow,
            run=self.driver.run_id,
            workspace=workspace_tools.TOOL_NAMES if self.workspace is not None else (),
        )

    def _player(self) -> Player:
        """Who plays this Turn now: a seat can change hands between two requests."""
        player = self.driver.player_of(self.turn)
        return player if player is not None else self.player


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
