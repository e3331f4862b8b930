"""Beside the peers: the same human-in-the-loop workflow on jr2, LangGraph and DBOS, side by side (`make
bench-peers`; docs/benchmarks.md, "Beside the peers: LangGraph and DBOS").

One module per engine (jr2_host, jr2_up, langgraph_peer, dbos_peer), each run as a process of its own for one
store, and the driver (`python -m bench.peers`) that runs them one after the other, two rounds, and prints the
table. What they share (the scripted writer, the checks, the meters) is in common.py.
"""
