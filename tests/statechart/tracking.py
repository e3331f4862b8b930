"""Entry/exit tracking for the ported tests: a copy of a config whose states log when they are entered and left."""


def as_list(actions):
    if actions is None:
        return []
    if isinstance(actions, list):
        return list(actions)
    return [actions]


def instrumented(config, make_enter, make_exit):
    """Copy ``config`` so that every state's entry starts with ``make_enter(label)`` and its exit with
    ``make_exit(label)``, the label being the state's dotted path (the root's is ``__root__``). History
    pseudo-states are never entered, so they get no trackers."""

    def walk(node, label, path):
        node = dict(node)
        if node.get("type") == "history" or "history" in node and "states" not in node:
            return node
        node["entry"] = [make_enter(label), *as_list(node.get("entry"))]
        node["exit"] = [make_exit(label), *as_list(node.get("exit"))]
        if node.get("states"):
            node["states"] = {
                key: walk(child, ".".join([*path, key]), [*path, key]) for key, child in node["states"].items()
            }
        return node

    return walk(config, "__root__", [])


def track_entries(config):
    """Copy ``config`` so that every state logs "enter: path" / "exit: path" before its own actions.

    Returns ``(config_copy, flush)``; ``flush()`` hands back the log so far and clears it.
    """
    log = []

    def tracker(text):
        def track():
            log.append(text)

        return track

    def flush():
        taken = list(log)
        log.clear()
        return taken

    tracked = instrumented(config, lambda label: tracker(f"enter: {label}"), lambda label: tracker(f"exit: {label}"))
    return tracked, flush
