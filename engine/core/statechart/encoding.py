"""Values and snapshots to plain JSON: what a snapshot's `to_json()` and an actor snapshot's write. Lower than
serialize.py (which also reads them back, and needs the Snapshot class to do so), so a snapshot can write itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.refs import ActorRef

if TYPE_CHECKING:
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["REF_MARK", "encode", "snapshot_to_json"]

#: How an actor ref is marked in JSON (xstate's own mark), so a restored snapshot finds its children again.
REF_MARK = "xstate$$type"


def encode(value: Any) -> Any:
    """JSON-ready copy: actor refs become `{"xstate$$type": 1, "id": ...}`, exceptions `{"name", "message"}`."""
    if isinstance(value, ActorRef):
        return value.to_json()
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, BaseException):
        return {"name": type(value).__name__, "message": str(value)}
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return value.model_dump(mode="json")
    if hasattr(value, "get_persisted_snapshot") and hasattr(value, "session_id"):
        return {REF_MARK: 1, "id": value.id}
    return value


def snapshot_to_json(snapshot: Snapshot) -> dict[str, Any]:
    children = {}
    for child_id, ref in snapshot.children.items():
        children[child_id] = {
            "src": ref.src if isinstance(ref.src, str) else None,
            "system_id": ref.system_id,
            "sync_snapshot": ref.sync_snapshot,
            "input": encode(ref.input),
            "snapshot": ref.get_persisted_snapshot(),
        }
    return {
        "machine": snapshot.machine.id,
        "value": snapshot.value,
        "context": encode(snapshot.context),
        "status": snapshot.status,
        "output": encode(snapshot.output),
        "error": encode(snapshot.error),
        "children": children,
        "history_value": {hid: [n.id for n in nodes] for hid, nodes in snapshot.history_value.items()},
        "timers": [t.to_json() for t in snapshot.timers.values()],
        "seq": snapshot.seq,
    }
