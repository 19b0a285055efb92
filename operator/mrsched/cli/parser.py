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
import os
from pathlib import Path
from typing import TypeAlias

from mrsched.cli import commands
from mrsched.cli.operator_flags import add_operator_flags
from mrsched.localcluster.cluster import default_state_dir
from mrsched.policies import policy_names

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mrsched", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    subcommands = parser.add_subparsers(dest="command", required=True)
    _add_cluster(subcommands)
    _add_run(subcommands)
    _add_simulate(subcommands)
    _add_simulate_run(subcommands)
    _add_demo(subcommands)
    _add_emulator(subcommands)
    return parser


def _with_name(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--name", default="mrsched", help="cluster name (default: mrsched)")
    p.add_argument(
        "--state-dir",
        type=Path,
        default=default_state_dir(),
        help="where cluster state lives (default: $MRSCHED_STATE_DIR or ~/.cache/mrsched/clusters)",
    )
    return p


def _add_cluster(subcommands: Subcommands) -> None:
    cluster = subcommands.add_parser(
        "cluster", help="a local control plane with emulated heterogeneous nodes"
    )
    actions = cluster.add_subparsers(dest="action", required=True)
    up = _with_name(actions.add_parser("up", help="start the control plane, Prometheus and nodes"))
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
    up.set_defaults(func=commands.cluster_up)
    _with_name(actions.add_parser("status", help="what runs, where")).set_defaults(
        func=commands.cluster_status
    )
    _with_name(
        actions.add_parser("down", help="stop everything and remove the cluster's files")
    ).set_defaults(func=commands.cluster_down)
    fault = _with_name(actions.add_parser("fault", help="slow an emulated node down (model mode)"))
    fault.add_argument("node")
    fault.add_argument("kind", choices=("cpu-hog", "disk-hog", "lost-cores"))
    fault.add_argument(
        "--intensity",
        type=float,
        default=1.0,
        help="busy loops per core, hog streams, or cores lost (default 1)",
    )
    fault.add_argument("--duration", type=float, help="model seconds until it ends (default: until cleared)")
    fault.set_defaults(func=commands.cluster_fault)
    clear = _with_name(actions.add_parser("clear-faults", help="end every fault on a node"))
    clear.add_argument("node")
    clear.set_defaults(func=commands.cluster_clear_faults)


def _add_run(subcommands: Subcommands) -> None:
    """``mrsched run``: the process's own flags around the operator's (operator_flags, one per setting)."""
    run = subcommands.add_parser("run", help="the operator: watch MapReduceJobs and place their task pods")
    run.add_argument("--kubeconfig", type=Path, help="default: in-cluster, else $KUBECONFIG")
    add_operator_flags(run)
    run.add_argument("--liveness-port", type=int, default=8080, help="/healthz port (default 8080)")
    run.add_argument("--bind-address", default=os.environ.get("MRSCHED_BIND_ADDRESS", "127.0.0.1"))
    run.add_argument(
        "--lease-namespace",
        default=os.environ.get("MRSCHED_LEASE_NAMESPACE", "default"),
        help="namespace of the leader Lease (the operator's own)",
    )
    run.add_argument("--verbose", action="store_true")
    run.set_defaults(func=commands.run)


def _add_simulate(subcommands: Subcommands) -> None:
    simulate = subcommands.add_parser("simulate", help="run a scenario under several policies, side by side")
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
    simulate.set_defaults(func=commands.simulate)


def _add_simulate_run(subcommands: Subcommands) -> None:
    simulate_run = subcommands.add_parser(
        "simulate-run", help="one run of a sweep's plan (what each index of an --on-cluster Job runs)"
    )
    simulate_run.add_argument("plan", type=Path, help="the sweep's plan.pkl")
    simulate_run.add_argument("--index", type=int, help="the run (default: $JOB_COMPLETION_INDEX)")
    simulate_run.set_defaults(func=commands.simulate_run)


def _add_demo(subcommands: Subcommands) -> None:
    demo = subcommands.add_parser(
        "demo", help="a small job end to end on a throw-away local cluster (process mode), then tear down"
    )
    demo.add_argument("--policy", default="fair", choices=policy_names())
    demo.add_argument(
        "--crds", type=Path, default=None, help="CRD directory (default: the repository's crds/)"
    )
    demo.set_defaults(func=commands.demo)


def _add_emulator(subcommands: Subcommands) -> None:
    emulator = subcommands.add_parser("emulator", help="the node emulator process")
    actions = emulator.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="register nodes and play their kubelet")
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
    run.set_defaults(func=commands.emulator_run)
