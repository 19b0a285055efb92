"""What each ``mrsched`` subcommand does with its parsed arguments (``parser`` names one per subcommand as the
``func`` default); each returns the process's exit code."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import time
from pathlib import Path
from typing import Any

from mrsched.cli.operator_flags import operator_config
from mrsched.core.catalog import load_cluster_layout
from mrsched.emulator.client import EmulatorClient
from mrsched.localcluster.cluster import LocalCluster
from mrsched.simulator.scenario import ScenarioError


def cluster_up(args: argparse.Namespace) -> int:
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


def cluster_status(args: argparse.Namespace) -> int:
    print(json.dumps(LocalCluster.load(args.name, args.state_dir).status(), indent=2))
    return 0


def cluster_down(args: argparse.Namespace) -> int:
    LocalCluster.load(args.name, args.state_dir).down()
    print(f"cluster {args.name} is down")
    return 0


def _emulator_of(args: argparse.Namespace, node: str) -> str:
    cluster = LocalCluster.load(args.name, args.state_dir)
    for handle in cluster.emulators.values():
        if node in handle.nodes:
            return handle.url
    raise SystemExit(f"no emulator of cluster {args.name} has a node {node!r}")


def cluster_fault(args: argparse.Namespace) -> int:
    EmulatorClient(_emulator_of(args, args.node)).add_fault(
        args.node, args.kind, intensity=args.intensity, duration_s=args.duration
    )
    print(f"{args.kind} injected on {args.node}")
    return 0


def cluster_clear_faults(args: argparse.Namespace) -> int:
    EmulatorClient(_emulator_of(args, args.node)).clear_faults(args.node)
    print(f"faults cleared on {args.node}")
    return 0


def run(args: argparse.Namespace) -> int:
    """``mrsched run``: the operator, configured by its flags, else ``MRSCHED_*`` variables, else defaults."""
    from mrsched.operator.process.main import run_operator

    run_operator(
        operator_config(args),
        kubeconfig=args.kubeconfig,
        bind_address=args.bind_address,
        liveness_port=args.liveness_port,
        lease_namespace=args.lease_namespace,
        verbose=args.verbose,
    )
    return 0


def demo(args: argparse.Namespace) -> int:
    from mrsched.demo import REPO_CRDS, run_demo

    return run_demo(args.policy, args.crds or REPO_CRDS)


def simulate(args: argparse.Namespace) -> int:
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


def simulate_run(args: argparse.Namespace) -> int:
    from mrsched.simulator.sweepfiles import run_index

    index = args.index if args.index is not None else os.environ.get("JOB_COMPLETION_INDEX")
    if index is None:
        raise ScenarioError(
            "simulate-run needs --index or $JOB_COMPLETION_INDEX (an Indexed Job's pod has it)"
        )
    print(f"wrote {run_index(args.plan, int(index))}", flush=True)
    return 0


def emulator_run(args: argparse.Namespace) -> int:
    from mrsched.emulator.main import run as run_emulator
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
    run_emulator(cfg, port=args.port, ready_file=args.ready_file)
    return 0
