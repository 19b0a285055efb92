"""Process mode runs mrsched's images as this installation's programs, with what a kubelet gives a pod to reach
the API (issue 25): mrsched.emulator.localimages, podcredentials and incluster."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from mrsched.emulator.localimages import local_command, repository
from mrsched.emulator.podcredentials import PodCredentials, token_volumes
from mrsched.emulator.processes import ProcessRunner
from tests.kubehelpers import wait_for

#: What ServiceAccount admission adds to a pod (kube-api-access), as the apiserver returns it.
API_ACCESS = {
    "name": "kube-api-access-x1",
    "projected": {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                }
            },
        ]
    },
}
POD: dict[str, Any] = {
    "metadata": {"name": "op-1", "namespace": "ops", "uid": "u-1"},
    "spec": {
        "serviceAccountName": "mrsched",
        "volumes": [{"name": "tmp", "emptyDir": {}}, API_ACCESS],
        "containers": [{"name": "operator", "image": "ghcr.io/mrsched/mrsched:0.1.0"}],
    },
}


class FakeApi:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str, int]] = []

    def request_token(
        self, namespace: str, service_account: str, pod: dict[str, Any], expiration_s: int
    ) -> str:
        self.requests.append((namespace, service_account, pod["metadata"]["uid"], expiration_s))
        return "jwt-for-" + service_account

    def config_map_value(self, namespace: str, name: str, key: str) -> str:
        return {("ops", "kube-root-ca.crt", "ca.crt"): "-----BEGIN CERTIFICATE-----"}[(namespace, name, key)]

    @property
    def api_address(self) -> tuple[str, str]:
        return "127.0.0.1", "36443"


def test_our_images_run_this_installations_programs_as_their_entrypoints_would() -> None:
    assert repository("ghcr.io/mrsched/mrsched:0.1.0") == "ghcr.io/mrsched/mrsched"
    assert repository("localhost:5000/x/y@sha256:ab") == "localhost:5000/x/y"
    operator = {
        "image": "ghcr.io/mrsched/mrsched:0.1.0",
        "command": ["mrsched"],
        "args": ["run", "--verbose"],
    }
    python = [sys.executable]
    assert local_command(operator) == ([*python, "-m", "mrsched"], ["run", "--verbose"])
    assert local_command({"image": "ghcr.io/mrsched/mrsched:0.1.0"}) == ([*python, "-m", "mrsched"], ["run"])
    worker = {"image": "ghcr.io/mrsched/worker:0.1.0", "command": ["python", "-m", "mrworker"]}
    assert local_command(worker) == (python, ["-m", "mrworker"])
    # Any other image: its command as written, and none when it has none (no entrypoint is known).
    assert local_command({"image": "busybox", "command": ["sh", "-c"], "args": ["true"]}) == (
        [],
        ["sh", "-c", "true"],
    )
    assert local_command({"image": "busybox"}) == ([], [])


def test_the_service_account_volume_is_filled_as_a_kubelet_fills_it(tmp_path: Path) -> None:
    api = FakeApi()
    credentials = PodCredentials(api)
    assert list(token_volumes(POD)) == ["kube-api-access-x1"]
    credentials.fill(POD, API_ACCESS, tmp_path)
    assert (tmp_path / "token").read_text() == "jwt-for-mrsched"
    assert api.requests == [("ops", "mrsched", "u-1", 3607)]  # bound to this pod, for the admitted lifetime
    assert stat.S_IMODE((tmp_path / "token").stat().st_mode) == 0o600
    assert (tmp_path / "ca.crt").read_text().startswith("-----BEGIN")
    assert (tmp_path / "namespace").read_text() == "ops"
    assert credentials.environment()["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert credentials.environment()["KUBERNETES_SERVICE_PORT"] == "36443"
    assert (
        token_volumes({"spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]}})
        == {}
    )


def test_a_program_run_in_cluster_reads_the_pods_own_token_and_ca(tmp_path: Path) -> None:
    """mrsched.emulator.incluster points the kubernetes client's in-cluster loader at the pod's directory, then
    runs the program unchanged."""
    (tmp_path / "token").write_text("the-pods-token")
    (tmp_path / "ca.crt").write_text("not a real CA")
    program = tmp_path / "probe_incluster.py"
    program.write_text(
        "import json, sys\n"
        "from kubernetes import client, config\n"
        "cfg = client.Configuration()\n"
        "config.load_incluster_config(client_configuration=cfg)\n"
        "print(json.dumps([cfg.host, list(cfg.api_key.values()), cfg.ssl_ca_cert, sys.argv]))\n"
    )
    env = {
        **os.environ,
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "36443",
        "PYTHONPATH": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-m", "mrsched.emulator.incluster", str(tmp_path), "probe_incluster", "a", "b"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    ).stdout
    host, keys, ca, argv = json.loads(out)
    assert (host, keys, ca) == (
        "https://127.0.0.1:36443",
        ["bearer the-pods-token"],
        str(tmp_path / "ca.crt"),
    )
    assert argv[1:] == ["a", "b"]  # the program sees its own arguments


def test_a_pod_of_our_image_runs_in_cluster_from_its_token_volume(tmp_path: Path) -> None:
    """ProcessRunner end to end on a pod as the apiserver returns it: the image's program is this Python, run
    under mrsched.emulator.incluster (the client's in-cluster config reads the pod's token), the token volume
    filled and its path rewritten, the apiserver named, and the wildcard bind address the pod's own."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "podprobe.py").write_text(
        "import json, os, sys\n"
        "from kubernetes import client, config\n"
        "cfg = client.Configuration()\n"
        "config.load_incluster_config(client_configuration=cfg)\n"
        "print(json.dumps([cfg.host, list(cfg.api_key.values()), open(sys.argv[1]).read(), os.environ['BIND']]))\n"
    )
    mount = "/var/run/secrets/kubernetes.io/serviceaccount"
    container = {
        "name": "c",
        "image": "ghcr.io/mrsched/worker:0.1.0",
        "command": ["python", "-m", "podprobe"],
        "args": [f"{mount}/namespace"],
        "env": [{"name": "BIND", "value": "0.0.0.0"}, {"name": "PYTHONPATH", "value": str(tmp_path / "lib")}],
        "volumeMounts": [{"name": "kube-api-access-x1", "mountPath": mount}],
    }
    pod = {**POD, "spec": {**POD["spec"], "containers": [container]}}
    runner = ProcessRunner(tmp_path / "data", tmp_path / "run", credentials=PodCredentials(FakeApi()))
    runner.start("ops/op-1", "n0", pod, address="127.9.0.7")
    exits = wait_for(runner.poll, timeout_s=60, what="the pod's process to end")
    log = (tmp_path / "run" / "u-1" / "container.log").read_text()
    assert [(e.pod_key, e.exit_code) for e in exits] == [("ops/op-1", 0)], log
    host, keys, namespace, bind = json.loads(log)
    assert (host, keys, namespace) == ("https://127.0.0.1:36443", ["bearer jwt-for-mrsched"], "ops")
    assert bind == "127.9.0.7", "the wildcard address is the pod's own, as in its network namespace"


def test_the_kubelets_restart_rules_and_back_offs() -> None:
    from mrsched.emulator.podstate import PodState, restarts_after
    from mrsched.emulator.podstatus import Requests

    def pod(policy: str) -> dict[str, Any]:
        return {"spec": {"restartPolicy": policy}}

    assert restarts_after(pod("Always"), 0) and restarts_after(pod("Always"), 1)
    assert restarts_after(pod("OnFailure"), 137) and not restarts_after(pod("OnFailure"), 0)
    assert not restarts_after(pod("Never"), 1)
    state = PodState("u", "n", Requests())
    waits = []
    for _ in range(7):  # each run ends a second after it started
        state.restart_backoff_s = state.next_restart_backoff(state.ran_since + 1)
        waits.append(state.restart_backoff_s)
    assert waits == [10, 20, 40, 80, 160, 300, 300]
    state.ran_since = 0.0
    assert state.next_restart_backoff(600.0) == 10, (
        "a container that ran 10 minutes starts the back-off again"
    )
    mounts = []
    for _ in range(10):
        state.mount_backoff_s = state.next_mount_backoff()
        mounts.append(state.mount_backoff_s)
    assert mounts == [0.5, 1, 2, 4, 8, 16, 32, 64, 122, 122]


def test_a_mount_over_a_directory_of_this_machines_program_maps_only_the_containers_paths(
    tmp_path: Path,
) -> None:
    """The chart's operator mounts an emptyDir at /tmp; where this installation lives under /tmp (a fresh clone
    there, as on CI), its program was rewritten into the volume and could not start. Only the container's
    arguments name container paths."""
    top = "/" + Path(sys.executable).parts[1]  # the mount shadows the program's directory in the container
    script = "import sys; open(sys.argv[1], 'w').write('written')"
    container = {
        "name": "c",
        "image": "ghcr.io/mrsched/worker:0.1.0",
        "command": ["python", "-c", script, f"{top}/out.txt"],
        "volumeMounts": [{"name": "scratch", "mountPath": top}],
    }
    pod = {
        "metadata": {"name": "p", "namespace": "ops", "uid": "u-2"},
        "spec": {"volumes": [{"name": "scratch", "emptyDir": {}}], "containers": [container]},
    }
    runner = ProcessRunner(tmp_path / "data", tmp_path / "run")
    runner.start("ops/p", "n0", pod)
    exits = wait_for(runner.poll, timeout_s=60, what="the pod's process to end")
    assert [(e.exit_code, e.reason) for e in exits] == [(0, None)], exits
    assert (tmp_path / "data" / "scratch" / "out.txt").read_text() == "written"
