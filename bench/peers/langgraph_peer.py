"""LangGraph 1.x: notes as a graph whose `human` node waits in `interrupt()`, resumed with `Command(resume=...)`.

    python -m bench.peers.langgraph_peer --store sqlite --runs 1000 --json out.json
    DATABASE_URL=postgres://... python -m bench.peers.langgraph_peer --store postgres --runs 1000 --json out.json

The graph: START -> write -> human -> write -> END. `write` is the scripted writer (common.write): it asks first,
and finishes with the notes after the reply; `human` interrupts with the question and returns the reply. One
thread (thread_id) per run. Durability "sync": each step's checkpoint is committed before the next step starts
and before `invoke` returns (the default, "async", writes it while the next step runs).

- SQLite: `SqliteSaver` on a file, its one connection set to WAL and synchronous=NORMAL (what jr2 uses).
- PostgreSQL: `PostgresSaver` on one autocommit connection (`from_conn_string`), a fresh database.

`invoke` is a blocking call that runs the graph to its interrupt (or its end), so the runs are started, and then
answered, one after another, on this process's one thread. A waiting run is rows only: no task holds it.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import sys
from functools import partial
from typing import Any, TypedDict

from bench.peers.common import (
    CHANGES,
    QUESTION,
    Meter,
    PgServer,
    Result,
    WrongResult,
    check_notes,
    engine_args,
    fresh_pg_database,
    pg_rows,
    reply_of,
    run_module,
    sqlite_rows,
    version,
    vm_rss_kib,
    write,
)


class Notes(TypedDict, total=False):
    changes: str
    replies: list[str]
    question: str
    notes: str


def build_graph(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def writer(state: Notes) -> dict[str, Any]:
        pick, text = write(state["changes"], state.get("replies", []))
        return {"question": text} if pick == "ask" else {"notes": text}

    def human(state: Notes) -> dict[str, Any]:
        reply = interrupt(state["question"])
        return {"replies": [*state.get("replies", []), reply]}

    graph = StateGraph(Notes)
    graph.add_node("write", writer)
    graph.add_node("human", human)
    graph.add_edge(START, "write")
    graph.add_conditional_edges("write", lambda state: END if state.get("notes") else "human", ["human", END])
    graph.add_edge("human", "write")
    return graph.compile(checkpointer=checkpointer)


def drive(graph: Any, runs: int, label: str, meters: tuple[Meter, Meter]) -> float:
    """A warm-up run, then N started and N answered; RSS per waiting run."""
    from langgraph.types import Command

    def start(thread: str) -> None:
        out = graph.invoke(
            {"changes": CHANGES, "replies": []}, {"configurable": {"thread_id": thread}}, durability="sync"
        )
        asked = [i.value for i in out.get("__interrupt__", ())]
        if asked != [QUESTION]:
            raise WrongResult(f"thread {thread}: interrupts {asked!r}, expected [{QUESTION!r}]")

    def answer(thread: str, reply: str) -> None:
        out = graph.invoke(Command(resume=reply), {"configurable": {"thread_id": thread}}, durability="sync")
        check_notes({"notes": out.get("notes")}, reply, f"thread {thread}")

    start("warm-up")
    answer("warm-up", "Warm")
    threads = [f"{label}-{i}" for i in range(runs)]
    gc.collect()
    rss0 = vm_rss_kib()
    with meters[0].span() as m:
        for thread in threads:
            m.timed(partial(start, thread))
    gc.collect()
    rss_per_run = (vm_rss_kib() - rss0) / runs
    for thread in threads:  # every run waits: its next task is the interrupted `human`
        state = graph.get_state({"configurable": {"thread_id": thread}})
        if state.next != ("human",):
            raise WrongResult(f"thread {thread}: next {state.next!r}, expected ('human',)")
    with meters[1].span() as m:
        for i, thread in enumerate(threads):
            m.timed(partial(answer, thread, reply_of(i, label)))
    return rss_per_run


def measure(args: Any) -> Result:
    config = ""
    if args.store == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = args.tmp / "checkpoints.sqlite3"
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = SqliteSaver(conn)
        saver.setup()
        meters = (Meter(sqlite_rows(path)), Meter(sqlite_rows(path)))
        config = "SqliteSaver on a file, one connection; WAL, synchronous=NORMAL; durability='sync'"
        rss = drive(build_graph(saver), args.runs, args.label, meters)
        conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        url = fresh_pg_database(os.environ["DATABASE_URL"], "peers_langgraph")
        server = PgServer(url)
        meters = (Meter(pg_rows(url), server), Meter(pg_rows(url), server))
        config = "PostgresSaver.from_conn_string (one autocommit connection); durability='sync'"
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            rss = drive(build_graph(saver), args.runs, args.label, meters)
    return Result(
        engine="LangGraph",
        store=args.store,
        runs=args.runs,
        versions=version("langgraph", "langgraph-checkpoint", f"langgraph-checkpoint-{args.store}"),
        config=config,
        acknowledged="start: `invoke` returns at the interrupt; answer: `invoke(Command(resume=...))` at the end",
        start=meters[0].out,
        answer=meters[1].out,
        rss_per_waiting_kib=rss,
    )


if __name__ == "__main__":
    sys.exit(run_module(engine_args("python -m bench.peers.langgraph_peer", ("sqlite", "postgres")), measure))
