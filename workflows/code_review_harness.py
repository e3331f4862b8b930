"""Code review with a coding harness in the coder's seat: the `code_review` workflow, whose coder is an Agent
played over MCP (`agent(model="mcp", ...)`).

A harness that speaks MCP (Claude Code, Cursor, an IDE) connects to the coder's seat of a run,
`/mcp/runs/<run id>/seats/coder/` with an API token (docs/guides/mcp-seat.md): its tools are the coder's Menu
(`submit`) and the workspace tools, and `await_turn` reads each Turn's prompt. Until a client takes the seat the
coder's Turn waits ("waiting for an MCP client to take the coder's seat"); the Dial `timeout_s` faults it when no
client comes in time. The reviewer is the same model as in `code_review` (offline, its scripted stand-in).
"""

from engine import agent, scripted

from .code_review import CODER_INSTRUCTIONS, offline_reviewer, review_machine

#: How long the coder's Turn waits for a harness to take the seat, in seconds.
WAIT_FOR_HARNESS = 3600

machine = review_machine(
    "code_review_harness",
    agent(model="mcp", instructions=CODER_INSTRUCTIONS, workspace="shared", dials={"timeout_s": WAIT_FOR_HARNESS}),
)

scripted("code_review_harness.reviewer")(offline_reviewer)
