"""``mrsched demo``: a small job end to end on a throw-away local control plane, in process mode.

What it does, printing each step and the real kubectl output:

1. starts kube-apiserver, etcd, kube-controller-manager, kube-scheduler and Prometheus (``mrsched.localcluster``)
   and three emulated worker nodes of two classes whose "kubelet" runs each task pod's command as a process;
2. installs the MapReduceJob CRD and starts the operator (``mrsched run``) as a process;
3. applies a ``randomtextwriter`` job (map-only, writes text) and, when it has succeeded, a ``wordcount`` job
   over that text;
4. shows ``kubectl get mrj`` while they run, ``kubectl describe mrj wordcount`` (conditions and Events), where
   the policy put each pod and why, and the ten most frequent words of the output;
5. tears everything down. ``mrsched cluster up`` gives a cluster that stays, for trying things by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from mrsched.core.catalog import ClusterLayout, NodeGroup
from mrsched.localcluster.cluster import LocalCluster
from mrsched.localcluster.ports import free_port
from mrsched.localcluster.toolchain import Toolchain

REPO_CRDS = Path(__file__).resolve().parents[2] / "crds"
NAMESPACE = "default"


def _job(name: str, spec: dict[str, Any]) -> str:
    body = {"apiVersion": "mrsched.dev/v1alpha1", "kind": "MapReduceJob", "metadata": {"name": name}}
    return yaml.safe_dump({**body, "spec": spec}, sort_keys=False)


GENERATOR = _job(
    "text",
    {
        "workload": {"app": "randomtextwriter", "parameters": {"bytesPerMap": 4_000_000}},
        "output": {"path": "demo/text"},
        "maps": 3,
        "reduces": 0,
        "resources": {"map": {"cpu": "500m", "memory": "256Mi"}},
    },
)
WORDCOUNT = _job(
    "wordcount",
    {
        "workload": {"app": "wordcount"},
        "input": {"paths": ["demo/text"]},
        "output": {"path": "demo/counts"},
        "maps": 4,
        "reduces": 2,
        "resources": {
            "map": {"cpu": "500m", "memory": "256Mi"},
            "reduce": {"cpu": "500m", "memory": "256Mi"},
        },
    },
)


class Demo:
    def __init__(self, policy: str, crds: Path) -> None:
        self.policy = policy
        self.crds = crds
        self.tool = Toolchain.locate()
        self.workdir = Path(tempfile.mkdtemp(prefix="mrsched-demo-"))
        self.cluster: LocalCluster | None = None
        self.operator: subprocess.Popen[bytes] | None = None

    def kubectl(self, *args: str, stdin: str | None = None, show: bool = True) -> str:
        assert self.cluster is not None
        if show:
            print(f"\n$ kubectl {' '.join(args)}", flush=True)
        out = subprocess.run(
            [str(self.tool.kubectl), "--kubeconfig", str(self.cluster.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if show:
            print(out.rstrip(), flush=True)
        return out

    def run(self) -> int:
        started = time.monotonic()
        print(f"== starting a local control plane and 3 emulated nodes (process mode) in {self.workdir}")
        self.cluster = LocalCluster.up(
            f"demo-{os.getpid()}", state_dir=self.workdir / "state", tool=self.tool
        )
        layout = ClusterLayout(
            name="demo",
            nodes=[
                NodeGroup.model_validate({"class": "small", "count": 2, "namePrefix": "worker-small-"}),
                NodeGroup.model_validate({"class": "large", "count": 1, "namePrefix": "worker-large-"}),
            ],
        )
        data = self.workdir / "data"
        self.cluster.emulate(layout, mode="process", data_dir=data, heartbeat_interval_s=2.0)
        self.kubectl("get", "nodes", "-L", "mrsched.dev/node-class")
        self.kubectl("apply", "--server-side", "-f", str(self.crds))
        self.kubectl("wait", "--for=condition=Established", "crd/mapreducejobs.mrsched.dev", show=False)
        self._start_operator()
        print(f"\n== the operator runs with policy {self.policy}; submitting jobs")
        self._submit_and_wait("text", GENERATOR)
        self._submit_and_wait("wordcount", WORDCOUNT)
        self.kubectl("describe", "mrj", "wordcount")
        self.kubectl(
            "get",
            "pods",
            "-l",
            "mrsched.dev/job=wordcount",
            "-o",
            "custom-columns=POD:.metadata.name,NODE:.spec.nodeName,"
            "PLACEMENT:.metadata.annotations.mrsched\\.dev/placement",
        )
        counts: Counter[str] = Counter()
        for part in sorted((data / "data" / "namespaces" / NAMESPACE / "demo" / "counts").glob("part-r-*")):
            for line in part.read_text().splitlines():
                word, _, n = line.rpartition("\t")
                counts[word] += int(n)
        print(
            f"\n== output: {len(counts)} distinct words, {sum(counts.values())} in all; the ten most frequent:"
        )
        for word, total in counts.most_common(10):
            print(f"{total:>8}  {word}")
        print(f"\n== done in {time.monotonic() - started:.0f} s")
        return 0

    def _start_operator(self) -> None:
        assert self.cluster is not None
        log = open(self.workdir / "operator.log", "wb")  # noqa: SIM115 - lives as long as the process
        self.operator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mrsched",
                "run",
                "--kubeconfig",
                str(self.cluster.kubeconfig),
                "--policy",
                self.policy,
                "--heartbeat",
                "0.5",
                "--worker-command",
                f"{sys.executable} -m mrworker",
                "--lease-namespace",
                NAMESPACE,
                "--prometheus-url",
                self.cluster.prometheus.url,
                "--metrics-port",
                str(free_port()),
                "--liveness-port",
                str(free_port()),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        print(f"operator log: {self.workdir / 'operator.log'}")

    def _submit_and_wait(self, name: str, manifest: str, timeout_s: float = 300) -> None:
        print(f"\n$ kubectl apply -f {name}.yaml\n{manifest.rstrip()}")
        self.kubectl("apply", "-f", "-", stdin=manifest, show=False)
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            assert self.operator is not None
            if self.operator.poll() is not None:
                raise RuntimeError(f"the operator exited; see {self.workdir / 'operator.log'}")
            table = self.kubectl("get", "mrj", name, show=False)
            if table != last:
                print(table.rstrip() if not last else table.splitlines()[-1], flush=True)
                last = table
            phase = self.kubectl("get", "mrj", name, "-o", "jsonpath={.status.phase}", show=False)
            if phase in ("Succeeded", "Failed"):
                # The phase may have changed after the table above was read: show the final row too.
                final = self.kubectl("get", "mrj", name, show=False)
                if final != last:
                    print(final.splitlines()[-1], flush=True)
                if phase == "Failed":
                    self.kubectl("describe", "mrj", name)
                    raise RuntimeError(f"job {name} failed")
                return
            time.sleep(0.5)
        raise RuntimeError(f"job {name} did not finish in {timeout_s:.0f} s")

    def close(self, succeeded: bool) -> None:
        if self.operator is not None and self.operator.poll() is None:
            self.operator.terminate()
            self.operator.wait(timeout=30)
        if self.cluster is not None:
            self.cluster.down(self.tool)
            print("cluster torn down")
        if succeeded:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:  # keep the operator's log and the data for a look
            print(f"kept {self.workdir} (operator.log, data/)", file=sys.stderr)


def run_demo(policy: str = "fair", crds: Path = REPO_CRDS) -> int:
    demo = Demo(policy, crds)
    code = 1
    try:
        code = demo.run()
        return code
    finally:
        demo.close(succeeded=code == 0)
