"""The ``mrsched`` command line.

mrsched cluster up [--name N] [--nodes FILE] [--mode model|process] [--time-scale X] [--no-nodes]
mrsched cluster status [--name N]
mrsched cluster down [--name N]
mrsched cluster fault NODE KIND [--intensity X] [--duration S] [--name N]
mrsched cluster clear-faults NODE [--name N]
mrsched run [--policy P] [--kubeconfig F] ...   (the operator)
mrsched demo [--policy P]           (a small job end to end on a throw-away local cluster)
mrsched simulate SCENARIO [--policies P,Q] [--seed S,T] [--mode M] [--concurrency C] [--out DIR]
                 [--load-state F] [--save-state F] [--jobs N]
                 [--on-cluster NAMESPACE --claim-dir DIR [--claim C] [--image I] [--command C]]
mrsched simulate-run PLAN [--index I]   (one run of a sweep's plan: each pod of an --on-cluster Job)
mrsched emulator run ...            (the node-emulator process; the cluster commands start it)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from mrsched.clustersweep import SweepError
from mrsched.core.catalog import CatalogError, load_cluster_layout
from mrsched.core.policy import PolicyConfigError
from mrsched.emulator.client import EmulatorClient, EmulatorError
from mrsched.localcluster.cluster import LocalCluster, default_state_dir
from mrsched.localcluster.toolchain import ToolchainError
from mrsched.policies import policy_names
from mrsched.simulator.scenario import ScenarioError
from mrsched.simulator.traces import TraceError


def _cluster_up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    layout = None if args.no_nodes else load_cluster_layout(args.nodes)
    cluster = LocalCluster.up(args.name, state_dir=args.state_dir, persistent=True)
    try:
        if layout is not None:
            cluster.emulate(
                layout,
                mode=args.mode,
                emulator_id=f"{args.name}-nodes",
                time_scale=args.time_scale,
                data_dir=args.data_dir,
            )
    except BaseException:
        cluster.down()
        raise
    elapsed = time.monotonic() - started
    emulator = next(iter(cluster.emulators.values()), None)
    print(f"cluster {args.name} is up in {elapsed:.1f} s")
    print(f"kubeconfig: {cluster.kubeconfig}")
    print(f"prometheus: {cluster.prometheus.url}")
    if emulator:
        print(f"emulator:   {emulator.url} ({emulator.mode} mode; nodes {', '.join(emulator.nodes)})")
    print(f"\n  export KUBECONFIG={cluster.kubeconfig}")
    return 0


def _cluster_status(args: argparse.Namespace) -> int:
    print(json.dumps(LocalCluster.load(args.name, args.state_dir).status(), indent=2))
    return 0


def _cluster_down(args: argparse.Namespace) -> int:
    LocalCluster.load(args.name, args.state_dir).down()
    print(f"cluster {args.name} is down")
    return 0


def _emulator_of(args: argparse.Namespace, node: str) -> str:
    cluster = LocalCluster.load(args.name, args.state_dir)
    for handle in cluster.emulators.values():
        if node in handle.nodes:
            return handle.url
    raise SystemExit(f"no emulator of cluster {args.name} has a node {node!r}")


def _cluster_fault(args: argparse.Namespace) -> int:
    EmulatorClient(_emulator_of(args, args.node)).add_fault(
        args.node, args.kind, intensity=args.intensity, duration_s=args.duration
    )
    print(f"{args.kind} injected on {args.node}")
    return 0


def _cluster_clear_faults(args: argparse.Namespace) -> int:
    EmulatorClient(_emulator_of(args, args.node)).clear_faults(args.node)
    print(f"faults cleared on {args.node}")
    return 0


def _queries(pairs: list[str]) -> dict[str, str]:
    """``NAME=PROMQL`` flags as a dict (the PromQL may contain '=')."""
    out = {}
    for pair in pairs:
        name, sep, query = pair.partition("=")
        if not sep or not name or not query:
            raise SystemExit(f"mrsched: --metrics-query {pair!r}: expected NAME=PROMQL")
        out[name] = query
    return out


def _run_operator(args: argparse.Namespace) -> int:
    from mrsched.operator.config import OperatorConfig
    from mrsched.operator.main import run_operator

    config = OperatorConfig.from_env(
        policy=args.policy,
        heartbeat_s=args.heartbeat_s,
        namespaces=tuple(args.namespaces) if args.namespaces else None,
        node_selector=args.node_selector,
        worker_image=args.worker_image,
        worker_command=tuple(args.worker_command.split()) if args.worker_command else None,
        data_claim=args.data_claim,
        data_host_path=args.data_host_path,
        prometheus_url=args.prometheus_url,
        metrics_node_label=args.metrics_node_label,
        metrics_node_pattern=args.metrics_node_pattern,
        metrics_queries=_queries(args.metrics_query) if args.metrics_query else None,
        metrics_rate_window=args.metrics_rate_window,
        metrics_max_age_s=args.metrics_max_age_s,
        metrics_port=args.metrics_port,
        policy_options=json.loads(args.policy_options) if args.policy_options else None,
        probe_nodes=args.probe_nodes,
        probe_namespace=args.probe_namespace,
        probe_scale=args.probe_scale,
        probe_repeats=args.probe_repeats,
        health_monitor=args.health_monitor,
        taint_degraded_nodes=args.taint_degraded_nodes,
        degraded_canary_interval_s=args.degraded_canary_interval_s,
        health_write_interval_s=args.health_write_interval_s,
        allowed_images=tuple(args.allowed_images) if args.allowed_images else None,
        allow_user_override=args.allow_user_override,
        allowed_policies=tuple(args.allowed_policies) if args.allowed_policies else None,
        max_tasks_per_namespace=args.max_tasks_per_namespace,
    )
    run_operator(
        config,
        kubeconfig=args.kubeconfig,
        bind_address=args.bind_address,
        liveness_port=args.liveness_port,
        lease_namespace=args.lease_namespace,
        verbose=args.verbose,
    )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from mrsched.demo import REPO_CRDS, run_demo

    return run_demo(args.policy, args.crds or REPO_CRDS)


def _simulate(args: argparse.Namespace) -> int:
    from mrsched.simulator.report import write_report
    from mrsched.simulator.run import run_scenario
    from mrsched.simulator.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    if args.concurrency:
        scenario = scenario.with_concurrency(args.concurrency)
    policies = args.policies.split(",") if args.policies else None
    seeds = [int(s) for s in args.seed.split(",")] if args.seed else None
    loaded = json.loads(args.load_state.read_text()) if args.load_state else None
    saved: dict[str, Any] | None = {} if args.save_state else None
    executor = None
    if args.on_cluster:
        from mrsched.clustersweep import DEFAULT_IMAGE, run_on_cluster

        if args.claim_dir is None:
            raise ScenarioError("--on-cluster needs --claim-dir: where this machine sees the claim's files")
        executor = run_on_cluster(
            args.on_cluster,
            args.claim,
            args.claim_dir,
            parallelism=args.jobs,
            image=args.image or DEFAULT_IMAGE,
            command=shlex.split(args.command) if args.command else None,
            kubeconfig=args.kubeconfig,
            node_selector=_labels(args.node_selector),
        )
    summary, first = run_scenario(
        scenario,
        policies,
        seeds,
        progress=lambda line: print(line, flush=True),
        load_state=loaded,
        saved_state=saved,
        mode=args.mode,
        workers=args.jobs,
        executor=executor,
    )
    out = args.out or Path("results") / summary["mode"] / scenario.name
    write_report(summary, first, out)
    print(f"wrote {out}/results.json, report.md and plots")
    if args.save_state and saved is not None:
        args.save_state.parent.mkdir(parents=True, exist_ok=True)
        args.save_state.write_text(json.dumps(saved, indent=1) + "\n")
        print(f"wrote the learned state of {', '.join(saved)} to {args.save_state}")
    return 0


def _labels(spec: str | None) -> dict[str, str] | None:
    """``k=v,k2=v2`` as a dict (None for none)."""
    if not spec:
        return None
    pairs = [part.split("=", 1) for part in spec.split(",")]
    if any(len(pair) != 2 or not pair[0] for pair in pairs):
        raise ScenarioError(f"--node-selector takes key=value[,key=value], not {spec!r}")
    return {key: value for key, value in pairs}


def _simulate_run(args: argparse.Namespace) -> int:
    from mrsched.simulator.sweepfiles import run_index

    index = args.index if args.index is not None else os.environ.get("JOB_COMPLETION_INDEX")
    if index is None:
        raise ScenarioError(
            "simulate-run needs --index or $JOB_COMPLETION_INDEX (an Indexed Job's pod has it)"
        )
    print(f"wrote {run_index(args.plan, int(index))}", flush=True)
    return 0


def _emulator_run(args: argparse.Namespace) -> int:
    from mrsched.emulator.main import run
    from mrsched.emulator.service import EmulatorConfig

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cfg = EmulatorConfig(
        kubeconfig=args.kubeconfig,
        layout=load_cluster_layout(args.cluster_file),
        mode=args.mode,
        emulator_id=args.id,
        name_prefix=args.name_prefix,
        data_dir=args.data_dir,
        run_dir=args.run_dir,
        seed=args.seed,
        time_scale=args.time_scale,
        heartbeat_interval_s=args.heartbeat_interval,
    )
    run(cfg, port=args.port, ready_file=args.ready_file)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mrsched", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    cluster = commands.add_parser("cluster", help="a local control plane with emulated heterogeneous nodes")
    cluster_commands = cluster.add_subparsers(dest="action", required=True)

    def with_name(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--name", default="mrsched", help="cluster name (default: mrsched)")
        p.add_argument(
            "--state-dir",
            type=Path,
            default=default_state_dir(),
            help="where cluster state lives (default: $MRSCHED_STATE_DIR or ~/.cache/mrsched/clusters)",
        )
        return p

    up = with_name(cluster_commands.add_parser("up", help="start the control plane, Prometheus and nodes"))
    up.add_argument(
        "--nodes",
        type=Path,
        help="cluster file of node classes (default: the packaged "
        "heterogeneous cluster, mrsched/data/clusters/default.yaml)",
    )
    up.add_argument(
        "--mode",
        choices=("model", "process"),
        default="model",
        help="model: task durations from hidden node physics; process: run pods' commands",
    )
    up.add_argument("--time-scale", type=float, default=1.0, help="model seconds per wall second")
    up.add_argument("--data-dir", type=Path, help="process mode: where pods' volumes live")
    up.add_argument("--no-nodes", action="store_true", help="start no emulated nodes")
    up.set_defaults(func=_cluster_up)
    with_name(cluster_commands.add_parser("status", help="what runs, where")).set_defaults(
        func=_cluster_status
    )
    with_name(
        cluster_commands.add_parser("down", help="stop everything and remove the cluster's files")
    ).set_defaults(func=_cluster_down)
    fault = with_name(cluster_commands.add_parser("fault", help="slow an emulated node down (model mode)"))
    fault.add_argument("node")
    fault.add_argument("kind", choices=("cpu-hog", "disk-hog", "lost-cores"))
    fault.add_argument(
        "--intensity",
        type=float,
        default=1.0,
        help="busy loops per core, hog streams, or cores lost (default 1)",
    )
    fault.add_argument("--duration", type=float, help="model seconds until it ends (default: until cleared)")
    fault.set_defaults(func=_cluster_fault)
    clear = with_name(cluster_commands.add_parser("clear-faults", help="end every fault on a node"))
    clear.add_argument("node")
    clear.set_defaults(func=_cluster_clear_faults)

    run_op = commands.add_parser("run", help="the operator: watch MapReduceJobs and place their task pods")
    run_op.add_argument("--kubeconfig", type=Path, help="default: in-cluster, else $KUBECONFIG")
    run_op.add_argument("--policy", help="default policy (MRSCHED_POLICY; default fair)")
    run_op.add_argument("--heartbeat", type=float, dest="heartbeat_s", help="seconds between rounds")
    run_op.add_argument(
        "--namespace", action="append", dest="namespaces", help="watch only these (repeatable)"
    )
    run_op.add_argument(
        "--node-selector", help="label selector of task nodes (default mrsched.dev/worker=true)"
    )
    run_op.add_argument("--worker-image", help="task image")
    run_op.add_argument(
        "--worker-command", help="task command, space-separated (default: python -m mrworker)"
    )
    run_op.add_argument(
        "--data-claim",
        help="ReadWriteMany PVC (in each job's namespace) every task mounts at /data (default mrsched-data)",
    )
    run_op.add_argument(
        "--data-host-path",
        help="instead of a claim, this directory of each node at /data (hostPath: Pod Security baseline refuses it)",
    )
    run_op.add_argument(
        "--allowed-image",
        action="append",
        dest="allowed_images",
        metavar="PREFIX",
        help="an image prefix a job's workload.image may start with, * for any (repeatable; default: none, so no "
        "job sets its own image or command)",
    )
    run_op.add_argument(
        "--allow-user-override",
        action="store_const",
        const=True,
        help="let a job's spec.user name someone other than its namespace",
    )
    run_op.add_argument(
        "--allowed-policy",
        action="append",
        dest="allowed_policies",
        metavar="POLICY",
        help="a policy a job's spec.policy may name (repeatable; default: any)",
    )
    run_op.add_argument(
        "--max-tasks-per-namespace",
        type=int,
        help="task pods of one namespace running or pending at once, at most (default 0: no cap)",
    )
    run_op.add_argument("--prometheus-url", help="Prometheus for node metrics")
    run_op.add_argument("--metrics-node-label", help="series label naming the node (default node)")
    run_op.add_argument(
        "--metrics-node-pattern", help="regex whose first group is the node in that label (default (.*))"
    )
    run_op.add_argument(
        "--metrics-query",
        action="append",
        metavar="NAME=PROMQL",
        help="replace one node metric's PromQL (docs/metrics.md); repeatable",
    )
    run_op.add_argument("--metrics-rate-window", help="rate() window of node metrics (default 1m)")
    run_op.add_argument(
        "--metrics-max-age",
        dest="metrics_max_age_s",
        type=float,
        help="seconds after which a node's metrics count as stale (default 30)",
    )
    run_op.add_argument("--policy-options", help="the default policy's options as JSON (docs/policies.md)")
    run_op.add_argument(
        "--probe-nodes",
        choices=("auto", "always", "never"),
        help="run probe tasks on each new or changed node (default auto: when a policy in use needs them)",
    )
    run_op.add_argument("--probe-namespace", help="namespace of probe pods (default: the first watched)")
    run_op.add_argument("--probe-scale", type=float, help="multiplies every probe's work (default 1)")
    run_op.add_argument("--probe-repeats", type=int, help="runs of each probe kind per node (default 4)")
    run_op.add_argument(
        "--no-health-monitor",
        dest="health_monitor",
        action="store_const",
        const=False,
        help="do not watch probed nodes for soft faults (slowdowns in CPU or disk; docs/profiles.md)",
    )
    run_op.add_argument(
        "--taint-degraded-nodes",
        action="store_const",
        const=True,
        help="taint a node judged degraded mrsched.dev/degraded=<resource>:NoSchedule until it recovers",
    )
    run_op.add_argument(
        "--degraded-canary-interval",
        dest="degraded_canary_interval_s",
        type=float,
        help="with --taint-degraded-nodes: seconds between canary maps on a tainted node, which show whether it "
        "recovered (default 30; 0: none)",
    )
    run_op.add_argument(
        "--health-write-interval",
        dest="health_write_interval_s",
        type=float,
        help="seconds between writes of a node's health unless its verdict changes (default 60)",
    )
    run_op.add_argument("--metrics-port", type=int, help="/metrics port (default 9090)")
    run_op.add_argument("--liveness-port", type=int, default=8080, help="/healthz port (default 8080)")
    run_op.add_argument("--bind-address", default=os.environ.get("MRSCHED_BIND_ADDRESS", "127.0.0.1"))
    run_op.add_argument(
        "--lease-namespace",
        default=os.environ.get("MRSCHED_LEASE_NAMESPACE", "default"),
        help="namespace of the leader Lease (the operator's own)",
    )
    run_op.add_argument("--verbose", action="store_true")
    run_op.set_defaults(func=_run_operator)

    simulate = commands.add_parser("simulate", help="run a scenario under several policies, side by side")
    simulate.add_argument("scenario", type=Path, help="a scenario file (bench/scenarios/*.yaml)")
    simulate.add_argument(
        "--policies",
        help=f"comma-separated policy names (default: the scenario's); known: {', '.join(policy_names())}",
    )
    simulate.add_argument("--seed", help="comma-separated seeds (default: the scenario's)")
    simulate.add_argument(
        "--mode",
        choices=("hadoop", "kubernetes", "yarn"),
        help="placement mode, the same for every policy: hadoop (each node's heartbeat offers that node), "
        "kubernetes (cluster-wide rounds woken by events) or yarn (YARN's protocol and its own fair or capacity "
        "scheduler); default: the scenario's first mode",
    )
    simulate.add_argument(
        "--concurrency",
        choices=("slots", "requests"),
        help="tasks per node: slots (the scenario's fixed Hadoop slots, as the papers ran) or requests "
        "(Kubernetes: pods while their requests fit the node); default: the scenario's (cluster.concurrency)",
    )
    simulate.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="runs (policy x seed) at once, each in its own process; results are the same as one at a time "
        "(default: all cores)",
    )
    simulate.add_argument("--out", type=Path, help="output directory (default: results/<scenario>)")
    simulate.add_argument(
        "--load-state",
        type=Path,
        help="JSON {policy: state} from --save-state: each policy starts from what an earlier run learned",
    )
    simulate.add_argument(
        "--save-state",
        type=Path,
        help="write each policy's learned state (policy.state(), after its last seed) as JSON {policy: state}",
    )
    simulate.add_argument(
        "--on-cluster",
        metavar="NAMESPACE",
        help="run the sweep as one Kubernetes Indexed Job in NAMESPACE (the kubeconfig's cluster), an index per "
        "run and --jobs pods at once; results are the same as here",
    )
    simulate.add_argument(
        "--claim",
        default="mrsched-data",
        help="with --on-cluster: the claim the pods share for the plan and the outputs (ReadWriteMany; default "
        "mrsched-data, the local cluster's)",
    )
    simulate.add_argument(
        "--claim-dir", type=Path, help="with --on-cluster: where this machine sees the claim"
    )
    simulate.add_argument("--image", help="with --on-cluster: the pods' image (default: the operator's)")
    simulate.add_argument("--command", help="with --on-cluster: the pods' command (default: mrsched)")
    simulate.add_argument("--kubeconfig", type=Path, help="with --on-cluster (default: $KUBECONFIG)")
    simulate.add_argument(
        "--node-selector", metavar="K=V[,K=V]", help="with --on-cluster: the nodes the pods may run on"
    )
    simulate.set_defaults(func=_simulate)

    simulate_run = commands.add_parser(
        "simulate-run", help="one run of a sweep's plan (what each index of an --on-cluster Job runs)"
    )
    simulate_run.add_argument("plan", type=Path, help="the sweep's plan.pkl")
    simulate_run.add_argument("--index", type=int, help="the run (default: $JOB_COMPLETION_INDEX)")
    simulate_run.set_defaults(func=_simulate_run)

    demo = commands.add_parser(
        "demo", help="a small job end to end on a throw-away local cluster (process mode), then tear down"
    )
    demo.add_argument("--policy", default="fair", choices=policy_names())
    demo.add_argument(
        "--crds", type=Path, default=None, help="CRD directory (default: the repository's crds/)"
    )
    demo.set_defaults(func=_demo)

    emulator = commands.add_parser("emulator", help="the node emulator process")
    emulator_commands = emulator.add_subparsers(dest="action", required=True)
    run = emulator_commands.add_parser("run", help="register nodes and play their kubelet")
    run.add_argument("--kubeconfig", type=Path, required=True)
    run.add_argument("--cluster-file", type=Path, help="node classes and counts (default: packaged cluster)")
    run.add_argument("--mode", choices=("model", "process"), default="model")
    run.add_argument("--id", default="emulator", help="this emulator's id, put on its nodes as a label")
    run.add_argument("--name-prefix", default="", help="prefix of the node names")
    run.add_argument("--port", type=int, default=0, help="metrics and chaos port on 127.0.0.1 (0: any)")
    run.add_argument("--data-dir", type=Path, default=Path("/tmp/mrsched-data"))
    run.add_argument("--run-dir", type=Path, default=Path("/tmp/mrsched-run"))
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--time-scale", type=float, default=1.0)
    run.add_argument("--heartbeat-interval", type=float, default=10.0, help="seconds between Lease renewals")
    run.add_argument("--ready-file", type=Path, help="written with the port once the nodes are registered")
    run.set_defaults(func=_emulator_run)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
    except (
        ToolchainError,
        CatalogError,
        FileExistsError,
        FileNotFoundError,
        EmulatorError,
        ScenarioError,
        PolicyConfigError,
        TraceError,
        SweepError,
    ) as err:
        print(f"mrsched: {err}", file=sys.stderr)
        code = 2
    sys.exit(code)
