"""Run the node emulator as a process: ``mrsched emulator run`` (started by the local-cluster harness).

It registers its nodes, serves metrics and chaos hooks on loopback, writes ``{"port": N, "pid": P}`` to the
ready file once everything answers, and on SIGTERM or SIGINT stops its tasks and removes its pods and Nodes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from pathlib import Path

from mrsched.emulator.control import ControlServer
from mrsched.emulator.service import Emulator, EmulatorConfig

log = logging.getLogger("mrsched.emulator")


def run(
    cfg: EmulatorConfig, *, host: str = "127.0.0.1", port: int = 0, ready_file: Path | None = None
) -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    emulator = Emulator(cfg)
    control = ControlServer(emulator, host, port)
    control.start()
    try:
        emulator.start()
        control.ready.set()
        if ready_file is not None:
            tmp = ready_file.with_suffix(".tmp")
            tmp.write_text(
                json.dumps({"port": control.port, "pid": os.getpid(), "nodes": list(emulator.nodes)})
            )
            tmp.replace(ready_file)
        log.info(
            "emulator %s ready; metrics and chaos hooks on http://%s:%d", cfg.emulator_id, host, control.port
        )
        # Wake up now and then: the kernel may deliver SIGTERM to another thread, and Python runs signal
        # handlers only when the main thread gets back to its interpreter loop.
        while not stop.wait(0.5):
            pass
    finally:
        log.info("emulator %s stopping", cfg.emulator_id)
        control.stop()
        emulator.stop(remove_nodes=True)
