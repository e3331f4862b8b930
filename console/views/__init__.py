"""The Console's Django views: thin, over what the engine computes and the runtime committed; no rule lives here.

Each reads the request, asks console/pages/ for what the page shows, and renders it. Reading needs a logged-in user
(or `JR2_CONSOLE_OPEN_READS`); starting runs, answering Gates, playing seats and cancelling need the runtime's
permissions (console/access.py). Inputs go to the host that drives the run; the engine decides, and a refusal comes
back to the form in the engine's words.
"""
