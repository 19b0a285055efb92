"""Fixtures over the real local control plane (see docs/local-cluster.md).

* ``local_cluster`` (session): kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok's
  controller started by kwokctl from the cached binaries, plus a Prometheus scraping every second.
* ``namespace`` (function): a fresh namespace, deleted afterwards.
* ``emulate`` (function): a factory that starts emulated nodes of given classes and mode, stopped afterwards.
* ``kube``: a small dict-based client and the real kubectl.

A test run killed before its teardown leaves its cluster behind; the next run reaps it first.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from mrsched.core.catalog import ClusterLayout, NodeGroup
from mrsched.localcluster.cluster import EmulatorHandle, LocalCluster, reap_abandoned
from mrsched.localcluster.dataclaim import data_claim_manifests
from mrsched.localcluster.toolchain import Toolchain, cache_dir
from mrsched.operator.model.pods import TRACKING_FINALIZER
from tests.chart.helmtool import Helm
from tests.kubehelpers import Kube

#: Heartbeats every 2 s and a 12 s grace period, so that a node that stops heartbeating goes NotReady fast.
HEARTBEAT_S = 2.0
NODE_GRACE_S = 12.0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


#: Each kind of test's time limit (pytest-timeout), unless the test sets its own: a unit test that hangs is
#: stopped in a minute rather than in the ten minutes a journey on the control plane may take.
TIMEOUTS_S = {"unit": 120, "cluster": 600, "slow": 3600}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if "/tests/cluster/" in path:
            item.add_marker(pytest.mark.cluster)
        elif "/tests/chart/" in path:
            item.add_marker(pytest.mark.helm)
        if item.get_closest_marker("timeout") is None:
            kind = (
                "slow"
                if item.get_closest_marker("slow")
                else "cluster"
                if item.get_closest_marker("cluster") or "/e2e/" in path or "/tests/chaos/" in path
                else "unit"
            )
            item.add_marker(pytest.mark.timeout(TIMEOUTS_S[kind]))


def state_dir_for_tests() -> Path:
    return Path(os.environ.get("MRSCHED_TEST_STATE_DIR", cache_dir() / "test-clusters"))


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return Toolchain.locate()  # fails, naming what to build or install, when a binary is missing


@pytest.fixture(scope="session")
def helm(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """The real helm (tests/chart without a cluster, tests/cluster with one)."""
    return Helm(toolchain.helm, tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="session")
def local_cluster(toolchain: Toolchain) -> Iterator[LocalCluster]:
    reap_abandoned(state_dir_for_tests())
    # Turn SIGTERM into KeyboardInterrupt so that an interrupted run still tears the cluster down.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    cluster = LocalCluster.up(
        f"t{os.getpid()}-{uuid.uuid4().hex[:4]}",
        state_dir=state_dir_for_tests(),
        tool=toolchain,
        node_grace_s=NODE_GRACE_S,
    )
    try:
        yield cluster
    finally:
        cluster.down(toolchain)
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def kube(local_cluster: LocalCluster, toolchain: Toolchain) -> Iterator[Kube]:
    k = Kube(local_cluster.kubeconfig, toolchain.kubectl)
    yield k
    k.close()


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    """A namespace set up as docs/security.md tells a tenant to: with the data claim the operator's task pods
    mount by default (bound by the real kube-controller-manager to a volume of its own)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.core.create_namespace({"metadata": {"name": name}}, _preload_content=False).data  # noqa: B018
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(data_claim_manifests(name)))
    yield name
    delete_namespace(kube, name)
    kube.kubectl("delete", "pv", f"data-{name}", "--wait=false", "--ignore-not-found")


def delete_namespace(kube: Kube, name: str) -> None:
    """Delete a test's namespace. The operator is stopped by now, so the task pods' finalizer (which it removes
    once a pod's outcome is recorded) is removed here, or the namespace would stay Terminating."""
    pods = kube.core.list_namespaced_pod(name, _preload_content=False)
    for pod in json.loads(pods.data)["items"]:
        if TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or []):
            with contextlib.suppress(ApiException):  # gone meanwhile
                kube.core.patch_namespaced_pod(
                    pod["metadata"]["name"],
                    name,
                    [{"op": "remove", "path": "/metadata/finalizers"}],
                    _content_type="application/json-patch+json",
                    _preload_content=False,
                ).read()
    kube.core.delete_namespace(name, _preload_content=False).data  # noqa: B018


EmulateFactory = Callable[..., EmulatorHandle]


@pytest.fixture
def emulate(local_cluster: LocalCluster, tmp_path: Path) -> Iterator[EmulateFactory]:
    """``emulate({"small": 1, "large": 1}, mode="model", racks=1, **options)`` starts nodes named
    ``<prefix><class>-<n>`` with a prefix unique to the test (``<prefix><class>-r<k>-<n>`` in rack-<k> when
    ``racks`` > 1); returns the emulator's handle (``.nodes``, ``.client``)."""
    started: list[str] = []

    def start(classes: dict[str, int], mode: str = "model", racks: int = 1, **options: Any) -> EmulatorHandle:
        prefix = f"n{uuid.uuid4().hex[:5]}-"
        groups = []
        for cls, n in classes.items():
            # With racks > 1, each class's nodes are split over rack-1..rack-<racks>, named <prefix><class>-r<k>-<i>.
            for rack in range(1, racks + 1):
                count = n // racks + (1 if rack <= n % racks else 0)
                if count:
                    groups.append(
                        NodeGroup.model_validate(
                            {
                                "class": cls,
                                "count": count,
                                "zone": "zone-a",
                                "rack": f"rack-{rack}",
                                "namePrefix": f"{prefix}{cls}-" + (f"r{rack}-" if racks > 1 else ""),
                            }
                        )
                    )
        options.setdefault("heartbeat_interval_s", HEARTBEAT_S)
        options.setdefault("data_dir", tmp_path / "data")
        handle = local_cluster.emulate(ClusterLayout(name="test", nodes=groups), mode=mode, **options)
        started.append(handle.emulator_id)
        return handle

    yield start
    for emulator_id in started:
        if emulator_id in local_cluster.emulators:
            local_cluster.stop_emulator(emulator_id)
