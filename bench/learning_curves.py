"""Learning curves of ThroughputScheduler (seed 002 ch.3) on the J_IO + Pi workload, repeated.

The workload of a scenario (default ``bench/scenarios/gupta-ch3-pi-jio.yaml``) runs K times in a row per seed.
ThroughputScheduler keeps what it learned between repetitions the way the operator does across restarts: after
each repetition its ``state()`` is saved as JSON and loaded into the next repetition's fresh policy
(``load_state``), exactly what ``mrsched simulate --save-state/--load-state`` does. Each repetition re-probes the
nodes (new noise) and redraws the task noise (its own simulation seed). FIFO and Fair run the same repetitions.

Recorded:

(a) the probes' κc, κd, Ω per node against the hidden physics (relative error);
(b) each app's posterior mean θ after every observation against the true θ of one map (the catalog's demand at
    the map's input size: θc = CPU-s, θd = (read + write MB)/100; reference-machine seconds), and |Σ|;
(c) the makespan of every repetition, per policy;
(d) the contention bias: an observation is ``y = T − Ω`` with T the map's actual duration, which the posterior
    reads as ``θc/κc + θd/κd`` (Eq 3.2, a task alone on its node). With two map slots per node, tasks share
    the node (two J_IO maps share one disk), so y is stretched; the ratio y / (a·θ_true) per app and node class
    is reported, and is what biases the learned θ.

Usage: ``python bench/learning_curves.py [--scenario F] [--reps 5] [--seeds 1,2,3] [--out DIR]``
(``make bench-learning``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from mrsched.core.catalog import application, expand_layout
from mrsched.core.model import TaskOutcome
from mrsched.core.policy import Policy, TruePhysics
from mrsched.policies import make_policy
from mrsched.policies.throughput.policy import Throughput
from mrsched.simulator.engine import Simulation
from mrsched.simulator.scenario import Scenario, load_scenario
from mrsched.simulator.summary import physics_label
from mrsched.simulator.workload import build_jobs

#: The ThroughputScheduler variants compared: the thesis' stopping rule alone, and with the digest's I3-5 (b)
#: reading (Table 3.2's task counts as the explore length: J_IO was learned from 30 maps).
VARIANTS: dict[str, dict[str, Any]] = {
    "throughput": {},
    "throughput:explore30": {"maxExploreTasks": 30},
}
BASELINES = ("fifo", "fair")


def true_theta(scenario: Scenario) -> dict[str, tuple[float, float]]:
    """θ = (θc, θd) of one map of each job's app at its input size, reference seconds (the hidden demand)."""
    out = {}
    for job in scenario.workload.jobs:
        demand = application(job.app).profile("map").demand(job.input_mb_per_map)
        out[job.app] = (demand.cpu_s, demand.disk_s)
    return out


def _watch(policy: Throughput, sim: Simulation, log: dict[str, Any], rep: int, theta: dict[str, Any]) -> None:
    """Record the posterior after every observation, and each observation's contention stretch."""
    original = policy.on_task_finished

    def hooked(outcome: TaskOutcome) -> None:
        original(outcome)
        task = outcome.task
        if task.kind != "map" or not outcome.succeeded:
            return
        app = sim._app_of.get(task.job_id)  # the simulator's own job -> app map
        if app is None or app not in theta:
            return
        node = sim.nodes[outcome.node]
        probe = node.probe
        if probe is None:
            return
        # Stretch: the observed y against the true θ on this node, both with the probed κ and Ω (what the
        # posterior sees) and with the hidden physics (the pure contention effect).
        hidden = sim.capabilities[outcome.node]
        t_c, t_d = theta[app]
        y = outcome.duration_s - probe.omega_s
        alone_probed = t_c / probe.kappa_c + t_d / probe.kappa_d
        alone_true = t_c / hidden.cpu_rate + t_d / hidden.disk_rate
        log["stretch"].append(
            {
                "rep": rep,
                "app": app,
                "class": node.node_class,
                "y_over_model": y / alone_probed,
                "duration_over_alone": outcome.duration_s / (hidden.overhead_s + alone_true),
                "level": outcome.locality,
            }
        )
        mean = policy.mean(app)
        state = policy.state()["apps"].get(app, {})
        log["posterior"].append(
            {
                "rep": rep,
                "app": app,
                "observations": state.get("observations"),
                "thetaC": None if mean is None else float(mean[0]),
                "thetaD": None if mean is None else float(mean[1]),
                "detSigma": state.get("detSigma"),
                "phase": state.get("phase"),
            }
        )

    policy.on_task_finished = hooked  # type: ignore[method-assign]


def run(scenario: Scenario, reps: int, seeds: list[int]) -> dict[str, Any]:
    nodes = [n.name for n in expand_layout(scenario.cluster.nodes)]
    theta = true_theta(scenario)
    out: dict[str, Any] = {
        "scenario": scenario.name,
        "reps": reps,
        "seeds": seeds,
        "true_theta": {a: {"thetaC": t[0], "thetaD": t[1]} for a, t in theta.items()},
        "makespan": {},
        "probes": [],
        "learning": {},
    }
    for name in (*BASELINES, *VARIANTS):
        out["makespan"][name] = {str(s): [] for s in seeds}
    for seed in seeds:
        states: dict[str, dict[str, Any] | None] = dict.fromkeys(VARIANTS)
        for rep in range(1, reps + 1):
            sim_seed = seed * 1000 + rep
            for name in (*BASELINES, *VARIANTS):
                jobs = build_jobs(scenario, nodes, sim_seed)
                log = out["learning"].setdefault(f"{name}/{seed}", {"posterior": [], "stretch": []})

                def factory(
                    truth: TruePhysics,
                    name: str = name,
                    sim_seed: int = sim_seed,
                    states: dict[str, dict[str, Any] | None] = states,
                ) -> Policy:
                    base = name.split(":", 1)[0]
                    policy = make_policy(base, VARIANTS.get(name), seed=sim_seed, truth=truth)
                    saved = states.get(name)
                    if saved is not None:  # what the previous repetition learned, through JSON as on disk
                        policy.load_state(json.loads(json.dumps(saved)))
                    return policy

                sim = Simulation(scenario.cluster, jobs, factory, seed=sim_seed)
                if isinstance(sim.policy, Throughput):
                    _watch(sim.policy, sim, log, rep, theta)
                    if name == "throughput":
                        for node_name, node in sim.nodes.items():
                            cap, probe = sim.capabilities[node_name], node.probe
                            assert probe is not None
                            out["probes"].append(
                                {
                                    "seed": seed,
                                    "rep": rep,
                                    "node": node_name,
                                    "class": node.node_class,
                                    "kappaC": probe.kappa_c,
                                    "kappaD": probe.kappa_d,
                                    "omegaS": probe.omega_s,
                                    "sigmaS": probe.sigma_s,
                                    "errKappaC": probe.kappa_c / cap.cpu_rate - 1.0,
                                    "errKappaD": probe.kappa_d / cap.disk_rate - 1.0,
                                    "errOmega": probe.omega_s / cap.overhead_s - 1.0,
                                }
                            )
                result = sim.run()
                out["makespan"][name][str(seed)].append(result.makespan_s)
                if name in VARIANTS:
                    states[name] = sim.policy.state()
                    log.setdefault("final_state", []).append({"rep": rep, **sim.policy.state()})
                print(f"seed {seed} rep {rep} {name}: makespan {result.makespan_s:.0f} s", flush=True)
    return out


def summarise(data: dict[str, Any]) -> dict[str, Any]:
    reps, seeds = data["reps"], data["seeds"]
    summary: dict[str, Any] = {"makespan_by_rep": {}, "probe_error": {}, "theta_error": {}, "stretch": {}}
    for name, by_seed in data["makespan"].items():
        summary["makespan_by_rep"][name] = [
            statistics.fmean(by_seed[str(s)][r] for s in seeds) for r in range(reps)
        ]
    by_class: dict[str, dict[str, list[float]]] = {}
    for p in data["probes"]:
        for key in ("errKappaC", "errKappaD", "errOmega"):
            by_class.setdefault(p["class"], {}).setdefault(key, []).append(p[key])
    summary["probe_error"] = {
        c: {
            k: {"mean": statistics.fmean(v), "mean_abs": statistics.fmean(abs(x) for x in v)}
            for k, v in d.items()
        }
        for c, d in sorted(by_class.items())
    }
    for variant in VARIANTS:
        per_app: dict[str, Any] = {}
        for app, truth in data["true_theta"].items():
            finals = []
            for s in seeds:
                states = data["learning"][f"{variant}/{s}"].get("final_state", [])
                row = []
                for st in states:
                    a = st["apps"].get(app, {})
                    row.append(
                        {
                            "rep": st["rep"],
                            "observations": a.get("observations"),
                            "thetaC": a.get("thetaC"),
                            "thetaD": a.get("thetaD"),
                            "detSigma": a.get("detSigma"),
                            "phase": a.get("phase"),
                        }
                    )
                finals.append(row)
            per_rep: list[dict[str, Any] | None] = []
            for r in range(reps):
                rows = [f[r] for f in finals if len(f) > r and f[r]["thetaC"] is not None]
                if not rows:
                    per_rep.append(None)
                    continue
                tc = statistics.fmean(x["thetaC"] for x in rows)
                td = statistics.fmean(x["thetaD"] for x in rows)
                dets = [x["detSigma"] for x in rows if x["detSigma"] is not None]
                per_rep.append(
                    {
                        "rep": r + 1,
                        "observations": statistics.fmean(x["observations"] for x in rows),
                        "thetaC": tc,
                        "thetaD": td,
                        "errThetaC": tc / truth["thetaC"] - 1.0 if truth["thetaC"] else None,
                        "errThetaD": td / truth["thetaD"] - 1.0 if truth["thetaD"] else None,
                        "detSigma": statistics.fmean(dets) if dets else None,
                        "phases": sorted({x["phase"] for x in rows}),
                    }
                )
            per_app[app] = per_rep
        summary["theta_error"][variant] = per_app
    stretch: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for key, log in data["learning"].items():
        if not key.startswith("throughput/"):
            continue
        for row in log["stretch"]:
            stretch.setdefault(row["app"], {}).setdefault(row["class"], []).append(
                (row["y_over_model"], row["duration_over_alone"])
            )
    summary["stretch"] = {
        app: {
            c: {
                "n": len(v),
                "y_over_model": statistics.fmean(x for x, _ in v),
                "duration_over_alone": statistics.fmean(y for _, y in v),
            }
            for c, v in sorted(d.items())
        }
        for app, d in sorted(stretch.items())
    }
    return summary


def plot(data: dict[str, Any], summary: dict[str, Any], out: Path) -> None:
    apps = list(data["true_theta"])
    fig, axes = plt.subplots(2, len(apps) + 1, figsize=(5 * (len(apps) + 1), 8), squeeze=False)
    seed = str(data["seeds"][0])
    for col, app in enumerate(apps):
        truth = data["true_theta"][app]
        for variant, style in zip(VARIANTS, ("-", "--"), strict=False):
            rows = [r for r in data["learning"][f"{variant}/{seed}"]["posterior"] if r["app"] == app]
            rows = [r for r in rows if r["thetaC"] is not None]
            xs = np.arange(1, len(rows) + 1)
            for row_i, key in enumerate(("thetaC", "thetaD")):
                ax = axes[row_i, col]
                ax.plot(xs, [r[key] for r in rows], style, linewidth=0.9, label=f"{variant} posterior mean")
                ax.axhline(truth[key], color="black", linestyle=":", label="true θ (alone)")
                ax.set(title=f"{app}: {key} (seed {seed})", xlabel="observations (all repetitions)")
        for row_i in range(2):
            axes[row_i, col].legend(fontsize=7)
            axes[row_i, col].set_yscale("symlog", linthresh=1.0)
    ax = axes[0, -1]
    for name, values in summary["makespan_by_rep"].items():
        ax.plot(range(1, len(values) + 1), values, marker="o", label=name)
    ax.set(title="makespan per repetition (mean over seeds)", xlabel="repetition", ylabel="s")
    ax.legend(fontsize=7)
    ax = axes[1, -1]
    for variant, style in zip(VARIANTS, ("-", "--"), strict=False):
        for app in apps:
            rows = [r for r in data["learning"][f"{variant}/{seed}"]["posterior"] if r["app"] == app]
            dets = [(i + 1, r["detSigma"]) for i, r in enumerate(rows) if r["detSigma"] is not None]
            if dets:
                ax.plot(*zip(*dets, strict=True), style, linewidth=0.9, label=f"{variant} {app}")
    ax.axhline(0.007, color="black", linestyle=":", label="threshold 0.007")
    ax.set(title="|Σθ| (thesis convention)", xlabel="observations", yscale="log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "learning.png", dpi=100)
    plt.close(fig)


def markdown(data: dict[str, Any], summary: dict[str, Any], command: str) -> str:
    reps = data["reps"]
    lines = [
        f"# ThroughputScheduler learning curves: {data['scenario']} repeated {reps} times",
        "",
        f"Command: `{command}`. Seeds {', '.join(map(str, data['seeds']))}; each repetition has its own simulation "
        "seed (new probe and task noise); ThroughputScheduler's state is saved after each repetition and loaded "
        "into the next (`state()`/`load_state()` through JSON, as `mrsched simulate --save-state/--load-state` and "
        "the operator across restarts). `throughput:explore30` caps the explore phase at 30 observations per app "
        "(digest I3-5 (b): Table 3.2's task counts as the explore length).",
        "",
        "## (c) Makespan per repetition (s, mean over seeds)",
        "",
        "| policy | " + " | ".join(f"rep {r}" for r in range(1, reps + 1)) + " | last / first |",
        "|---|" + "---:|" * (reps + 1),
    ]
    for name, values in summary["makespan_by_rep"].items():
        lines.append(
            f"| {name} | " + " | ".join(f"{v:.0f}" for v in values) + f" | {values[-1] / values[0]:.3f} |"
        )
    lines += [
        "",
        "## (a) Probe error against the hidden physics (relative, over nodes × seeds × repetitions)",
        "",
    ]
    lines += [
        "| node class | κc mean (mean abs) | κd mean (mean abs) | Ω mean (mean abs) |",
        "|---|---:|---:|---:|",
    ]
    for cls, errs in summary["probe_error"].items():
        cells = [
            f"{errs[k]['mean']:+.1%} ({errs[k]['mean_abs']:.1%})"
            for k in ("errKappaC", "errKappaD", "errOmega")
        ]
        lines.append(f"| {cls} | " + " | ".join(cells) + " |")
    lines += ["", "## (b) Learned θ (posterior mean after each repetition) against the true θ of one map", ""]
    truth = data["true_theta"]
    lines.append(
        "True θ (alone, reference seconds): "
        + "; ".join(f"{a} ({t['thetaC']:.2f}, {t['thetaD']:.2f})" for a, t in truth.items())
    )
    for variant, per_app in summary["theta_error"].items():
        lines += [
            "",
            f"### {variant}",
            "",
            "| app | rep | observations | θc | θd | err θc | err θd | |Σ| | phase |",
        ]
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for app, per_rep in per_app.items():
            for row in per_rep:
                if row is None:
                    continue
                err_c = "-" if row["errThetaC"] is None else f"{row['errThetaC']:+.0%}"
                err_d = "-" if row["errThetaD"] is None else f"{row['errThetaD']:+.0%}"
                det = "-" if row["detSigma"] is None else f"{row['detSigma']:.3g}"
                lines.append(
                    f"| {app} | {row['rep']} | {row['observations']:.0f} | {row['thetaC']:.2f} | {row['thetaD']:.2f} "
                    f"| {err_c} | {err_d} | {det} | {', '.join(row['phases'])} |"
                )
    lines += [
        "",
        "## (d) Contention bias of the observations (`throughput`, all seeds and repetitions)",
        "",
        "y/model = (T − Ω̂) / (θc/κ̂c + θd/κ̂d) with the true θ and the probed κ̂, Ω̂: what the posterior reads as one "
        "task alone. T/alone = duration over the isolated duration with the hidden physics (pure contention).",
        "",
        "| app | node class | maps | y / model | T / alone |",
        "|---|---|---:|---:|---:|",
    ]
    for app, d in summary["stretch"].items():
        for cls, s in d.items():
            lines.append(
                f"| {app} | {cls} | {s['n']} | {s['y_over_model']:.3f} | {s['duration_over_alone']:.3f} |"
            )
    lines += ["", "## Findings (computed)", ""]
    for variant in VARIANTS:
        for app in data["true_theta"]:
            crossings = []
            for s in data["seeds"]:
                rows = [r for r in data["learning"][f"{variant}/{s}"]["posterior"] if r["app"] == app]
                dets = [r["detSigma"] for r in rows]
                crossings.append(
                    next((i + 1 for i, d in enumerate(dets) if d is not None and d < 0.007), None)
                )
            got = [c for c in crossings if c is not None]
            reached = (
                f"after {statistics.fmean(got):.0f} observations on average ({len(got)}/{len(crossings)} seeds)"
                if got
                else "in no seed"
            )
            lines.append(f"* {variant}, {app}: |Σ| < 0.007 reached {reached} ({reps} repetitions).")
    ms = summary["makespan_by_rep"]
    later = {name: statistics.fmean(values[1:]) for name, values in ms.items()}
    for name, values in ms.items():
        lines.append(
            f"* {name}: makespan rep 1 {values[0]:.0f} s, reps 2-{reps} mean {later[name]:.0f} s "
            f"({later[name] / values[0] - 1:+.1%}); reps 2-{reps} vs FIFO {later[name] / later['fifo'] - 1:+.1%}, "
            f"vs Fair {later[name] / later['fair'] - 1:+.1%}."
        )
    lines += [
        "",
        "Plot: `learning.png` (posterior means per observation for the first seed, makespans, |Σ|).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", type=Path, default=Path("bench/scenarios/gupta-ch3-pi-jio.yaml"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--out", type=Path, default=Path("bench/results/learning-throughput"))
    args = parser.parse_args(argv)
    scenario = load_scenario(args.scenario)
    seeds = [int(s) for s in args.seeds.split(",")]
    data = run(scenario, args.reps, seeds)
    summary = summarise(data)
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python bench/learning_curves.py " + " ".join(argv if argv is not None else sys.argv[1:])
    (args.out / "results.json").write_text(
        json.dumps(
            {
                **physics_label(scenario.cluster),
                "summary": summary,
                "true_theta": data["true_theta"],
                "probes": data["probes"],
                "makespan": data["makespan"],
            },
            indent=1,
        )
        + "\n"
    )
    (args.out / "report.md").write_text(markdown(data, summary, command.strip()))
    plot(data, summary, args.out)
    print(f"wrote {args.out}/report.md, results.json and learning.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
