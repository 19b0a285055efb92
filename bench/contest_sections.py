"""The Kubernetes-mode contest report's sections beside its main table: who was given which offline input, the
experiments, the physics sensitivity table and the decomposition of what issue 49 changed."""

from __future__ import annotations

import json
import statistics
from typing import Any

from contest_setup import DECOMPOSITION, EXPERIMENTS, RECOMMENDED, REFERENCE, contest_scenario, policies_for
from scipy.stats import spearmanr

from mrsched.simulator.parity import offline_inputs


def offline_lines(names: list[str]) -> list[str]:
    """What each policy is given before the run, where any is given anything (mrsched.simulator.parity)."""
    out = []
    for name in names:
        scenario, _ = contest_scenario(name)
        given = offline_inputs(scenario, [p for p in policies_for(scenario) if p not in DECOMPOSITION])
        held = {p: g for p, g in given.items() if g}
        if held:
            out.append(f"* {name}: " + "; ".join(f"{p}: {', '.join(g)}" for p, g in held.items()))
    return out


def experiment_lines(table: dict[str, dict[str, Any]]) -> list[str]:
    """What each experiment (:data:`EXPERIMENTS`) is, and how it fared against kube-default here."""
    out = []
    for label, options in EXPERIMENTS.items():
        rows = [
            row
            for row in table.values()
            if "error" not in row["policies"].get(label, {"error": ""})
            and "error" not in row["policies"].get(RECOMMENDED, {"error": ""})
        ]
        kube = [row["policies"]["kube-default"]["mean_job_time_s"] for row in rows]
        wins = sum(row["policies"][label]["mean_job_time_s"] < k for row, k in zip(rows, kube, strict=True))
        base = sum(
            row["policies"][RECOMMENDED]["mean_job_time_s"] < k for row, k in zip(rows, kube, strict=True)
        )
        out += [
            f"`{label}` is an experiment, not shipped: {RECOMMENDED} with {json.dumps(options)} (ours: on "
            "Kubernetes, mix only the jobs with the least work left that fill the cluster, the others joining as "
            "they run down). It was chosen on this contest's scenarios before issue 49, so this table is no test "
            f"of it: here its mean job time is below kube-default's on {wins} of {len(rows)} scenarios, "
            f"{RECOMMENDED}'s on {base}; the held-out run (bench/results/kubernetes-heldout.md) judges it.",
            "",
        ]
    return out


def sensitivity_table(
    table: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]] | None, label: str
) -> list[str]:
    """Per scenario, under the measured and the other physics: kube-default's mean job time, the recommended
    policy's and the best policy's against it, the four fastest policies; and whether the recommended policy's
    verdict against kube-default and the policies' order (Spearman's rho of their mean job times) survive."""
    if not other:
        return []
    lines = [
        f"## Physics sensitivity: the same runs under {label}",
        "",
        "| scenario | physics | kube-default mean job (s) | "
        f"{RECOMMENDED} / kube-default | best policy (mean job / kube-default) | the four fastest |",
        "|---|---|---:|---:|---|---|",
    ]
    same_verdict, rhos = 0, []
    for name, row in table.items():
        if name not in other:
            continue
        means = []
        verdicts = []
        for physics, r in (("measured", row), (label, other[name])):
            ran = {
                p: v
                for p, v in r["policies"].items()
                if "error" not in v and p not in {*EXPERIMENTS, *DECOMPOSITION}
            }
            kube = ran["kube-default"]["mean_job_time_s"]
            order = sorted(ran, key=lambda p: ran[p]["mean_job_time_s"])
            best = next(p for p in order if p not in REFERENCE)
            lines.append(
                f"| {name} | {physics} | {kube:.0f} | {ran[RECOMMENDED]['mean_job_time_s'] / kube:.2f} | "
                f"{best} ({ran[best]['mean_job_time_s'] / kube:.2f}) | {', '.join(order[:4])} |"
            )
            means.append({p: v["mean_job_time_s"] for p, v in ran.items()})
            verdicts.append(ran[RECOMMENDED]["mean_job_time_s"] < kube)
        same_verdict += verdicts[0] == verdicts[1]
        both = sorted(set(means[0]) & set(means[1]))
        rhos.append(float(spearmanr([means[0][p] for p in both], [means[1][p] for p in both]).statistic))
    if not rhos:
        return [*lines, "", "No scenario ran under both physics yet.", ""]
    lines += [
        "",
        f"{RECOMMENDED}'s verdict against kube-default (mean job time below or not) is the same under both "
        f"physics on {same_verdict} of {len(rhos)} scenarios; the policies' order by mean job time correlates "
        f"between them by Spearman's rho {statistics.median(rhos):.2f} at the median (lowest "
        f"{min(rhos):.2f}).",
        "",
    ]
    return lines


def decomposition(table: dict[str, dict[str, Any]]) -> list[str]:
    """What two of issue 49's changes did, per scenario: kube-default's mean job time with its real queue and
    with the queue model of before; the recommended policy's with and without the α parity gives it."""
    rows = []
    for name, row in table.items():
        ran = row["policies"]
        kube, old = ran.get("kube-default", {}), ran.get("kube-default:job-order", {})
        if "mean_job_time_s" not in kube or "mean_job_time_s" not in old:
            continue
        rec, bare = ran.get(RECOMMENDED, {}), ran.get(f"{RECOMMENDED}:without-alpha", {})
        alpha = (
            f"{rec['mean_job_time_s']:.0f} / {bare['mean_job_time_s']:.0f}"
            if "mean_job_time_s" in rec and "mean_job_time_s" in bare
            else "- (no α given)"
        )
        rows.append(f"| {name} | {kube['mean_job_time_s']:.0f} / {old['mean_job_time_s']:.0f} | {alpha} |")
    if not rows:
        return []
    return [
        "## What the real queue and α parity changed (measured)",
        "",
        "Mean job time (s), means over the seeds: kube-default with kube-scheduler's queue (this contest's) / "
        "with the queue model of before issue 49 (the pods in job submission order, a round stopped at the first "
        f"pod that fits nowhere: `{next(iter(DECOMPOSITION))}`); {RECOMMENDED} with DARA's α (parity) / without "
        "it (as it ran before, the Fair fallback's until a class is fitted online).",
        "",
        f"| scenario | kube-default: real queue / job order | {RECOMMENDED}: with α / without |",
        "|---|---:|---:|",
        *rows,
        "",
    ]
