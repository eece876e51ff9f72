"""The load driver run in a thread of its own while a test drives a playbook against the server it loads."""

from __future__ import annotations

import contextlib
import threading

from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun


@contextlib.contextmanager
def background_load(params, join_s=120.0):
    """Run the load driver on params (loadrun.execute) in a thread while the block runs.

    Yields a dict that gets, once the run ends, "result" (the phases' results, as loadrun.execute returns them) or
    "error" (the driver's error text). Leaving the block waits for the run to end, at most join_s seconds, and
    sets "alive" (true when it did not end: bound the run with params' max_seconds)."""
    done = {}

    def drive():
        try:
            done["result"] = loadrun.execute(params, loadrun.plan(params))
        except (loadrun.LoadError, loadrun.loaddriver.LoadDriverError) as exc:
            done["error"] = str(exc)

    worker = threading.Thread(target=drive)
    worker.start()
    try:
        yield done
    finally:
        worker.join(timeout=join_s)
        done["alive"] = worker.is_alive()
