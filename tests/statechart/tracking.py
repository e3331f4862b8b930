"""Entry/exit tracking for the ported tests: a copy of a config whose states log when they are entered and left."""


def as_list(actions):
    if actions is None:
        return []
    if isinstance(actions, list):
        return list(actions)
    return [actions]


def track_entries(config):
    """Copy ``config`` so that every state logs "enter: path" / "exit: path" before its own actions.

    Returns ``(config_copy, flush)``; ``flush()`` hands back the log so far and clears it.
    The root is labelled ``__root__``; history pseudo-states are never entered, so they get no trackers.
    """
    log = []

    def instrument(node, label, path):
        node = dict(node)
        if node.get("type") == "history" or "history" in node and "states" not in node:
            return node

        def entry_tracker():
            log.append(f"enter: {label}")

        def exit_tracker():
            log.append(f"exit: {label}")

        node["entry"] = [entry_tracker, *as_list(node.get("entry"))]
        node["exit"] = [exit_tracker, *as_list(node.get("exit"))]
        if node.get("states"):
            node["states"] = {
                key: instrument(child, ".".join([*path, key]), [*path, key])
                for key, child in node["states"].items()
            }
        return node

    def flush():
        taken = list(log)
        log.clear()
        return taken

    return instrument(config, "__root__", []), flush
