"""Write a scenario's results: ``results.json``, ``report.md`` and PNG plots (matplotlib)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, never a display
import matplotlib.pyplot as plt

from mrsched.simulator.engine import SimulationResult
from mrsched.simulator.fitted import KEY as TARGET_FITTED
from mrsched.simulator.fitted import describe
from mrsched.simulator.result import SLOT_KEEPERS

_REFERENCES = ("fifo", "fair", "greedy-informed")


_MODES = {
    "hadoop": "a policy places tasks only on the node whose heartbeat offers it",
    "kubernetes": "cluster-wide rounds every heartbeat and whenever a task ends or a job arrives",
    "yarn": "YARN's protocol as SLS runs it: AM containers, node heartbeats, YARN's own Fair or Capacity scheduler",
}


def _ratio(value: float, reference: float | None) -> str:
    return f"{value / reference:.2f}" if reference else "-"


def _physics(summary: dict[str, Any]) -> list[str]:
    """What the run's physics was: the measured physics (every ``cluster.physics`` switch on) or which switches
    were off and why; a sensitivity variant; speculation; stragglers."""
    physics = summary.get("physics")
    if not isinstance(physics, dict):  # a result written before issue 49: every switch named was on, no other
        physics = {"on": physics or [], "off": ["(all others)"], "reason": "the physics before issue 49"}
    parts = [
        "the measured physics, every `cluster.physics` switch on"
        if not physics["off"]
        else "switches off: "
        + ", ".join(f"`{name}`" for name in physics["off"])
        + f" ({physics.get('reason', 'no reason recorded')})"
    ]
    if summary.get("variant"):
        parts.append(f"a sensitivity variant of it: {summary['variant']}")
    if summary.get("stragglers"):
        parts.append(f"stragglers {summary['stragglers']}")
    if summary.get("speculation"):
        parts.append("Hadoop 1's speculative execution for " + ", ".join(summary["speculation"]))
    elif summary.get("speculationOff"):
        parts.append(f"no speculative execution ({summary['speculationOff']})")
    return [f"Physics: {'; '.join(parts)} (docs/simulator.md).", ""]


def markdown(summary: dict[str, Any]) -> str:
    policies: dict[str, dict[str, Any]] = summary["policies"]
    bound = summary["lower_bound"]["makespan_s"]
    mode = summary.get("mode", "hadoop")
    lines = [
        f"# {summary['scenario']}",
        "",
        f"Source: {summary['source']}",
        "",
        f"Headline to reproduce: {summary['headline']}",
        "",
        *_target_fitted(summary),
        f"Placement mode: **{mode}**, the same for every policy below ({_MODES[mode]}).",
        "",
        *_physics(summary),
        f"Seeds: {', '.join(str(s) for s in summary['seeds'])}. Times in seconds, means over seeds. Ratios are "
        "this policy's value over the reference's (lower is better).",
        "",
        *_bounds(summary["lower_bound"]),
        *_slot_bound(summary),
        "| policy | makespan | mean job time | p50 | p95 | starvation | node-local maps | makespan / FIFO "
        "| / Fair | / greedy-informed | / lower bound | / slot bound | mean job time / FIFO | / Fair "
        "| / greedy-informed | / lower bound |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    slot = summary["lower_bound"].get("slot_bound_s")
    mean_bound = summary["lower_bound"].get("mean_job_time_s")
    refs = {r: policies.get(r) for r in _REFERENCES}
    for name, p in policies.items():
        local = p["locality"].get("node", 0.0) + p["locality"].get("none", 0.0)
        cells = [
            name,
            f"{p['makespan_s']:.0f}",
            f"{p['mean_job_time_s']:.0f}",
            f"{p['p50_job_time_s']:.0f}",
            f"{p['p95_job_time_s']:.0f}",
            f"{p['mean_starvation_s']:.0f}",
            f"{local:.0%}",
            *(_ratio(p["makespan_s"], r["makespan_s"] if r else None) for r in refs.values()),
            _ratio(p["makespan_s"], bound),
            _ratio(p["makespan_s"], slot),
            *(_ratio(p["mean_job_time_s"], r["mean_job_time_s"] if r else None) for r in refs.values()),
            _ratio(p["mean_job_time_s"], mean_bound),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    failed = {n: p["failed_jobs"] for n, p in policies.items() if p["failed_jobs"]}
    if failed:
        lines += ["", "Failed jobs (over all seeds): " + ", ".join(f"{n} {c}" for n, c in failed.items())]
    lines += _spread(policies) + _map_times(policies) + _detection(policies)
    extra = ", `throughput.png`" if any("detection" in p for p in policies.values()) else ""
    lines += ["", f"Plots: `job_completion_cdf.png`, `utilisation.png`, `policies.png`{extra}.", ""]
    return "\n".join(lines)


def _target_fitted(summary: dict[str, Any]) -> list[str]:
    """The target-fitted constants the results rest on, each with its source (none: no lines). A results.json
    written before ``targetFitted`` existed says so: its scenario file's ``sources`` has them."""
    if TARGET_FITTED not in summary:
        return [
            "Target-fitted constants: not recorded in this results.json (written before `targetFitted`); see "
            "the scenario file's and its catalog entries' `sources`.",
            "",
        ]
    return describe(summary[TARGET_FITTED])


def _bounds(bound: dict[str, Any]) -> list[str]:
    """The bounds that hold for every policy (mrsched.simulator.bounds): makespan and mean job time, and the
    parts of the makespan's."""
    parts = [
        f"work {bound['work_bound_s']:.0f} s",
        f"critical path {bound['critical_path_s']:.0f} s",
    ]
    if bound.get("per_job_bound_s") is not None:
        parts.append(f"each job's own (its maps alone, then its reduces) {bound['per_job_bound_s']:.0f} s")
    if bound.get("capacity_bound_s") is not None:
        parts.append(
            f"every task's pod-time packed into the nodes' places with release dates "
            f"{bound['capacity_bound_s']:.0f} s ({bound.get('capacity_method', 'lp')})"
        )
    lines = [
        f"Lower bound on makespan: {bound['makespan_s']:.0f} s, the largest of: {'; '.join(parts)}. Each task's "
        "own noise on each node, trace work and remote reads included; contention and stragglers left out, so "
        "it is optimistic and holds for every policy.",
        "",
    ]
    if bound.get("mean_job_time_s") is not None:
        lines += [
            f"Lower bound on mean job time: {bound['mean_job_time_s']:.0f} s (each job ends no sooner than its "
            "own bound, nor than SRPT on one machine with the cluster's whole capacity finishes its work; for "
            "the runs in which no job fails).",
            "",
        ]
    return lines


def _slot_bound(summary: dict[str, Any]) -> list[str]:
    slot = summary["lower_bound"].get("slot_bound_s")
    if slot is None:
        return []
    if summary.get("concurrency") == "requests":
        return [
            f"Requests bound (for every policy: the engine refuses a pod that does not fit): {slot:.0f} s: every "
            "task packed into as many places per node as the smallest request fits its cores and memory, each "
            "holding its place at least its least pod-time there (fractional LP, no contention).",
            "",
        ]
    return [
        f"Slot bound (for the policies that keep to the nodes' slots: {', '.join(SLOT_KEEPERS)}): {slot:.0f} s: "
        "maps packed into the nodes' map slots and reduces into their reduce slots with release dates, each "
        "holding its slot at least its least time there (its noise included), rounded up to the heartbeat in "
        "hadoop mode (fractional LP, no contention).",
        "",
    ]


def _spread(policies: dict[str, dict[str, Any]]) -> list[str]:
    if not all("makespan_sd_s" in p for p in policies.values()):
        return []
    lines = ["", "Makespan over seeds: mean ± population s.d. [min, max].", ""]
    for name, p in policies.items():
        lines.append(
            f"* {name}: {p['makespan_s']:.0f} ± {p['makespan_sd_s']:.0f} s "
            f"[{p['makespan_min_s']:.0f}, {p['makespan_max_s']:.0f}]"
        )
    return lines


def _map_times(policies: dict[str, dict[str, Any]]) -> list[str]:
    """Mean map time per app (seed 002 Table 3.3), with the node classes the maps ran on."""
    if not any(p.get("map_times") for p in policies.values()):
        return []
    lines = [
        "",
        "Mean map time per app over all seeds (s), and per node class (share of the app's maps):",
        "",
    ]
    for name, p in policies.items():
        cells = []
        for app, t in p.get("map_times", {}).items():
            classes = ", ".join(
                f"{c} {m:.1f} ({t['by_class_share'][c]:.0%})" for c, m in t["by_class_mean_s"].items()
            )
            cells.append(f"{app} {t['mean_s']:.1f} [{classes}]")
        lines.append(f"* {name}: " + "; ".join(cells))
    return lines


def _num(value: float | None, fmt: str = ".0f") -> str:
    return "-" if value is None else format(value, fmt)


def _detection(policies: dict[str, dict[str, Any]]) -> list[str]:
    """The health monitor's detection delay, suspected resource and false alarms, and the faulty node's
    throughput before and after its fault (``mrsched.simulator.detection``)."""
    rows = {n: p["detection"] for n, p in policies.items() if "detection" in p}
    if not rows:
        return []
    lines = [
        "",
        "## Soft-fault detection (health monitor)",
        "",
        "Detection delay: first Degraded verdict of the fault's node at or after the fault's start, minus the "
        "start (mean over the seeds that detected it; per seed, `-` = missed). Resource: seeds whose first "
        "Degraded verdict names the fault's resource (cpu-hog, lost-cores → cpu; disk-hog → disk). False "
        "alarms: onsets of a Degraded verdict on a node with no active fault (per run, mean; total over seeds) "
        "and node-seconds Degraded without an active fault (per run, mean).",
        "",
        "| policy | fault | detected | mean delay (s) | delay per seed (s) | suspected per seed | resource right "
        "| false alarms / run | total | degraded node-s / run |",
        "|---|---|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for name, d in rows.items():
        fa = f"{d['false_alarms_mean']:.1f} | {d['false_alarms_total']} | {d['false_alarm_node_s_mean']:.0f}"
        if not d["faults"]:
            lines.append(f"| {name} | none | - | - | - | - | - | {fa} |")
        for f in d["faults"]:
            per_seed = ", ".join(_num(x) for x in f["delays_s"])
            lines.append(
                f"| {name} | {f['kind']} on {f['node']} from {f['start_s']:.0f} s | {f['detected_seeds']}/{f['seeds']} "
                f"| {_num(f['mean_delay_s'])} | {per_seed} | {', '.join(f['suspected'])} "
                f"| {f['resource_right_seeds']}/{f['seeds']} | {fa} |"
            )
    if any(d["throughput"] for d in rows.values()):
        lines += [
            "",
            "Throughput of the fault's node and of its same-class peers (per node), mean over the whole windows "
            "before the fault and after it (to the fault's end or the run's last map): maps per minute, and "
            "Eq 4.4 work (isolated task-seconds completed per second). Settled: the node's maps per minute over "
            "the second half of the windows after the fault (a scheduler that adapts has recovered there, past "
            "the tasks it had started before).",
            "",
            "| policy | node | maps/min before | after | settled | peers' maps/min before | after | work/s before "
            "| after |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, d in rows.items():
            for t in d["throughput"]:
                lines.append(
                    f"| {name} | {t['node']} | {_num(t['maps_per_min_before'], '.2f')} "
                    f"| {_num(t['maps_per_min_after'], '.2f')} | {_num(t.get('maps_per_min_settled'), '.2f')} "
                    f"| {_num(t['peers_maps_per_min_before'], '.2f')} "
                    f"| {_num(t['peers_maps_per_min_after'], '.2f')} | {_num(t['work_per_s_before'], '.2f')} "
                    f"| {_num(t['work_per_s_after'], '.2f')} |"
                )
    return lines


def _throughput_plot(first_seed: dict[str, SimulationResult], out: Path) -> None:
    """Maps per minute per node over time (first seed), with the verdict onsets of the health monitor."""
    runs = {n: r.extra["detection"] for n, r in first_seed.items() if "detection" in r.extra}
    if not runs:
        return
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.4 * len(runs)), sharex=True, squeeze=False)
    for ax, (name, det) in zip(axes[:, 0], runs.items(), strict=True):
        width = det["series_window_s"]
        for node, series in det["series"].items():
            xs = [(k + 0.5) * width for k in range(len(series["maps_per_min"]))]
            (line,) = ax.plot(xs, series["maps_per_min"], linewidth=0.8, label=node)
            for t, degraded, _ in det["timeline"].get(node, []):
                ax.axvline(t, color=line.get_color(), linestyle=":" if degraded else "-", linewidth=0.6)
        for f in det["faults"]:
            ax.axvline(f["start_s"], color="black", linestyle="--", linewidth=1.0)
        ax.set(ylabel="maps / min", title=f"{name} (dashed: fault; dotted: Degraded verdict)")
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=6, ncol=4)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)


def plots(summary: dict[str, Any], first_seed: dict[str, SimulationResult], out: Path) -> None:
    policies: dict[str, dict[str, Any]] = summary["policies"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, p in policies.items():
        times = sorted(j["finish_s"] - j["submit_s"] for j in p["jobs"] if j["finish_s"] is not None)
        if times:
            ax.step(times, [(i + 1) / len(times) for i in range(len(times))], where="post", label=name)
    ax.set(
        xlabel="job completion time (s)", ylabel="fraction of jobs", title=f"{summary['scenario']}: job CDF"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "job_completion_cdf.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(
        len(first_seed), 1, figsize=(8, 2.2 * len(first_seed)), sharex=True, squeeze=False
    )
    for ax, (name, result) in zip(axes[:, 0], first_seed.items(), strict=True):
        for node, series in result.utilisation.items():
            if series:
                ax.plot([t for t, _ in series], [u for _, u in series], linewidth=0.8, label=node)
        ax.set(ylabel="CPU busy", ylim=(0, 1.05), title=name)
    axes[-1, 0].set_xlabel("time (s)")
    if len(result.utilisation) <= 12:
        axes[0, 0].legend(fontsize=6, ncol=4)
    fig.tight_layout()
    fig.savefig(out / "utilisation.png", dpi=110)
    plt.close(fig)

    names = list(policies)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 4))
    a1.bar(names, [policies[n]["makespan_s"] for n in names], color="tab:blue")
    a1.axhline(summary["lower_bound"]["makespan_s"], color="black", linestyle="--", label="lower bound")
    if summary["lower_bound"].get("slot_bound_s") is not None:
        a1.axhline(summary["lower_bound"]["slot_bound_s"], color="grey", linestyle=":", label="slot bound")
    a1.set(title="makespan (s)")
    a1.legend()
    a2.bar(names, [policies[n]["mean_job_time_s"] for n in names], color="tab:orange")
    a2.set(title="mean job time (s)")
    for ax in (a1, a2):
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(out / "policies.png", dpi=110)
    plt.close(fig)
    _throughput_plot(first_seed, out)


#: Above this many jobs in a run, each policy's per-job records (its first seed's) leave results.json for
#: :data:`JOBS_FILE`: the whole SWIM day's 5,894 jobs under 12 policies made results.json over 10 MB per mode,
#: and bench/results/ is committed. results.json keeps every aggregate.
JOBS_INLINE_MAX = 1000
#: The per-job records of a large run, ``{policy: [job, ...]}``, gzip-compressed JSON.
JOBS_FILE = "jobs.json.gz"


def write_results(summary: dict[str, Any], out: Path) -> None:
    """results.json, and for a run of more than :data:`JOBS_INLINE_MAX` jobs :data:`JOBS_FILE` beside it (each
    policy's ``jobs`` replaced by ``"jobs_file"``). The gzip header holds no time or name: a re-run that gives
    the same results writes the same bytes. :func:`load_results` reads either back whole."""
    policies: dict[str, dict[str, Any]] = summary["policies"]
    large = any(len(p.get("jobs", ())) > JOBS_INLINE_MAX for p in policies.values())
    jobs_path = out / JOBS_FILE
    if large:
        records = {name: p["jobs"] for name, p in policies.items() if "jobs" in p}
        payload = json.dumps(records, separators=(",", ":")).encode() + b"\n"
        jobs_path.write_bytes(gzip.compress(payload, compresslevel=9, mtime=0))
        summary = {
            **summary,
            "policies": {
                name: {**{k: v for k, v in p.items() if k != "jobs"}, "jobs_file": JOBS_FILE}
                if "jobs" in p
                else p
                for name, p in policies.items()
            },
        }
    elif jobs_path.exists():  # a smaller re-run into the same directory: nothing stale beside it
        jobs_path.unlink()
    (out / "results.json").write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n")


def load_results(directory: Path) -> dict[str, Any]:
    """A results directory's summary as :func:`run_scenario` returned it: per-job records put back from
    :data:`JOBS_FILE` where :func:`write_results` moved them."""
    summary: dict[str, Any] = json.loads((directory / "results.json").read_text())
    moved = [p for p in summary["policies"].values() if "jobs_file" in p]
    if moved:
        records = json.loads(gzip.decompress((directory / JOBS_FILE).read_bytes()))
        for name, p in summary["policies"].items():
            if p.pop("jobs_file", None) is not None:
                p["jobs"] = records[name]
    return summary


def write_report(summary: dict[str, Any], first_seed: dict[str, SimulationResult], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_results(summary, out)
    (out / "report.md").write_text(markdown(summary))
    plots(summary, first_seed, out)
