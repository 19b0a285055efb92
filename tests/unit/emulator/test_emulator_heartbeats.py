"""The emulated kubelets' heartbeats: Leases renewed by a small pool of threads, so that a slow API server does not
stretch one node's renewal interval by every other node's round trip (bench-scale's 1,000 nodes went NotReady when
one thread renewed them one after another); and each node's longest renewal gap is kept, so a run can say how late
its kubelets were. The API server is a fake here: each renewal takes a fixed time, as a busy one would."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import yaml

from mrsched.core.catalog import ClusterLayout, NodeGroup
from mrsched.emulator.service import HEARTBEAT_THREADS, Emulator, EmulatorConfig

ROUND_TRIP_S = 0.05
NODES = 12


class SlowLeases:
    """Registration calls answer at once; a Lease renewal takes ``ROUND_TRIP_S``. Counts renewals in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.renewals: dict[str, int] = {}

    def create_node(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"uid": f"uid-{body['metadata']['name']}"}}

    def patch_node_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        return {}

    def create_lease(self, body: dict[str, Any]) -> None:
        pass

    def renew_lease(self, name: str, renew_time: str) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(ROUND_TRIP_S)
        with self.lock:
            self.in_flight -= 1
            self.renewals[name] = self.renewals.get(name, 0) + 1

    def close(self) -> None:
        pass


def emulator(tmp_path: Path) -> tuple[Emulator, SlowLeases]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    layout = ClusterLayout(nodes=[NodeGroup.model_validate({"class": "small", "count": NODES})])
    emu = Emulator(EmulatorConfig(kubeconfig=kubeconfig, layout=layout, heartbeat_interval_s=0.2))
    fake = SlowLeases()
    emu.kube = fake  # type: ignore[assignment]
    return emu, fake


def test_leases_are_renewed_by_overlapping_calls_and_each_nodes_longest_gap_is_kept(tmp_path: Path) -> None:
    emu, fake = emulator(tmp_path)
    for state in emu.nodes.values():
        emu._register(state)
    silent = next(iter(emu.nodes))
    emu.set_heartbeats(silent, False)
    beats = threading.Thread(target=emu._heartbeat_loop, daemon=True)
    beats.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and min(fake.renewals.get(n, 0) for n in emu.nodes if n != silent) < 3:
        time.sleep(0.05)
    emu._stop.set()
    beats.join(timeout=5)

    assert fake.most_in_flight == HEARTBEAT_THREADS > 1, "renewals overlap, not one after another"
    assert silent not in fake.renewals, "a node whose heartbeats chaos stopped renews nothing"
    for name, state in emu.nodes.items():
        if name != silent:
            assert fake.renewals[name] >= 3
            assert state.max_renew_gap_s > 0, "the gap between two renewals is measured"
    # Shown by the control endpoint (GET /heartbeat-gaps, read by bench-scale, and in GET /nodes).
    shown = emu.heartbeat_gaps()
    assert shown == {n["name"]: n["heartbeatGapMaxS"] for n in emu.describe()}
    assert shown[silent] == 0.0
    assert all(gap > 0 for name, gap in shown.items() if name != silent)
