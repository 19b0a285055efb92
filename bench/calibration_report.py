"""``report.md`` and the plots of a calibration, rendered from the document ``bench/calibrate.py`` writes to
``calibration.json`` (machine, settings, fit, per-application points and curves, the start-up probe).

``report`` returns the Markdown: the fitted profiles beside what one task alone measured, each application's
measured and modelled times per k, and the bare start-up's CPU / wall ratio. ``plot`` writes DIR/<app>.png
(measured mean and range per k, the fitted physics' curve) and, when the probe ran, DIR/probe-unit.png.
Nothing is measured or fitted here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calibration_harness import PROBE


def _pct(value: float | None, spec: str = ".1%") -> str:
    return "n/a" if value is None else format(value, spec)


def report(doc: dict[str, Any], command: str) -> str:
    m, f = doc["machine"], doc["fit"]
    lines = [
        "# Calibration of the physics on our own workers (issue 19)",
        "",
        f"Produced by `{command}` on {m['date']}: {m['cpu_model']}, {m['cores']} cores, {m['memory_mb']} MB, "
        f"Python {m['python']}. Load average at start {' '.join(m['loadavg_start'])}, at end "
        f"{' '.join(m['loadavg_end'])}: other work on the machine disturbs the times.",
        "",
        "Each task is a real `python -m mrworker map` process; wall time is measured around the process "
        "(interpreter start included), CPU seconds by `wait4`. k tasks start together, each on its own split; "
        "inputs were generated just before (so likely in the page cache), outputs are fsynced by the worker. "
        "Modelled: k "
        f"identical tasks on `NodeModel(cores={m['cores']}, cpu_rate=1, disk_rate=1, noise off)`.",
        "",
        f"Machine constants (fitted jointly over all applications): cpu_contention = {f['cpu_contention']:.3f}, "
        f"disk_contention = {f['disk_contention']:.3f} (optimiser: {f['message']}).",
        "",
        "θc, θd and Ω are fitted to the mean wall time and the mean CPU seconds per task at each k (relative "
        "errors, equally weighted: wall time alone cannot tell CPU work from disk work); beside them what one "
        "task alone measured: its CPU seconds (θc's starting point) and its bytes moved / 100 MB/s (θd's). "
        "Load/task = CPU s / wall s at k=1 (above 1: more than one runnable thread). Mean error is the wall "
        "time's (the issue's figure of merit); CPU error the CPU seconds' (modelled: time held on a core plus "
        "half of Ω).",
        "",
        f"| app | size | θc (s) | CPU s k=1 | θd (s) | bytes k=1 (s) | Ω (s) | load/task k=1 | mean error | "
        f"target ≤ {doc['target_mean_error']:.0%} | CPU error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    sizes = doc["settings"]["sizes"]
    for app, a in doc["apps"].items():
        p, q = a["profile"], doc["fit"]["initial"][app]
        lines.append(
            f"| {app} | {sizes[app]['value']:g} {sizes[app]['unit']} | {p['cpu_s']:.2f} | {q['cpu_s']:.2f} | "
            f"{p['disk_s']:.2f} | {q['disk_s']:.2f} | {p['overhead_s']:.2f} | {a['load_per_task_k1']:.2f} | "
            f"{a['mean_abs_error']:.1%} | "
            f"{'met' if a['within_target'] else 'missed'} | {_pct(a['mean_abs_cpu_error'])} |"
        )
    odd = [
        app
        for app, a in doc["apps"].items()
        if a["cpu_fit_over_measured"] is not None and not 0.5 <= a["cpu_fit_over_measured"] <= 2.0
    ]
    if odd:
        lines += [
            "",
            f"**Check the profiles of {', '.join(odd)}**: the fitted θc is not within a factor of 2 of the CPU "
            "seconds the lone task used, although CPU seconds are a target of the fit: the wall times pulled "
            "harder than the CPU seconds (see each CPU error). A small wall error does not make such a profile "
            "right: wall times alone let the optimiser trade CPU work for disk work or Ω, which stretch "
            "differently with k (as when other work holds cores the model counts as free).",
        ]
    for app, a in doc["apps"].items():
        lines += [
            "",
            f"## {app}",
            "",
            "| k | tasks | measured mean (s) | min | max | modelled (s) | error | "
            "CPU s | modelled CPU s | CPU error | CPU/wall | read MB | written MB |",
            "|" + "---:|" * 13,
        ]
        for k, p in a["points"].items():
            lines.append(
                f"| {k} | {p['tasks']} | {p['measured_mean_s']:.2f} | {p['measured_min_s']:.2f} | "
                f"{p['measured_max_s']:.2f} | {p['modelled_s']:.2f} | {p['error']:+.1%} | {p['cpu_mean_s']:.2f} | "
                f"{p['modelled_cpu_s']:.2f} | {_pct(p.get('cpu_error'), '+.1%')} | {p['cpu_per_wall']:.2f} | "
                f"{p['read_mb']:.1f} | {p['written_mb']:.1f} |"
            )
        lines.append(
            f"\nMean absolute error {a['mean_abs_error']:.1%} (wall), {_pct(a['mean_abs_cpu_error'])} (CPU seconds)."
        )
    if doc["probe"]:
        probe, cores = doc["probe"], m["cores"]
        lines += [
            "",
            "## Start-up: `mrworker probe --probe-kind unit`",
            "",
            f"At k=1 the bare start-up takes {probe['wall_k1_s']:.3f} s of wall and {probe['cpu_k1_s']:.3f} s of "
            f"CPU: CPU/wall = {probe['cpu_per_wall_k1']:.2f} (near 1: start-up is CPU work, which competes for "
            "cores; the physics runs Ω as a delay that uses none). If it is CPU-bound its wall grows like "
            f"max(1, k/{cores}) once the tasks outnumber the cores.",
            "",
            "| k | runs | wall mean (s) | min | max | CPU s | CPU/wall | wall / wall(k=1) | max(1, k/cores) |",
            "|" + "---:|" * 9,
        ]
        for k, p in probe["points"].items():
            lines.append(
                f"| {k} | {p['tasks']} | {p['measured_mean_s']:.3f} | {p['measured_min_s']:.3f} | "
                f"{p['measured_max_s']:.3f} | {p['cpu_mean_s']:.3f} | {p['cpu_per_wall']:.2f} | "
                f"{p['measured_mean_s'] / probe['wall_k1_s']:.2f} | {max(1.0, int(k) / cores):.2f} |"
            )
    return "\n".join(lines) + "\n"


def plot(doc: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {app: (a["points"], a["curve"], a) for app, a in doc["apps"].items()}
    if doc["probe"]:
        series[PROBE] = (doc["probe"]["points"], {}, None)
    for name, (pts, curve, a) in series.items():
        fig, ax = plt.subplots(figsize=(6, 4))
        ks = [int(k) for k in pts]
        means = [p["measured_mean_s"] for p in pts.values()]
        low = [p["measured_mean_s"] - p["measured_min_s"] for p in pts.values()]
        high = [p["measured_max_s"] - p["measured_mean_s"] for p in pts.values()]
        ax.errorbar(ks, means, yerr=[low, high], fmt="o", capsize=4, label="measured (mean, min-max)")
        if curve:
            ax.plot([int(k) for k in curve], list(curve.values()), "-", label="physics, fitted")
            p = a["profile"]
            ax.set_title(
                f"{name}: θc {p['cpu_s']:.2f}, θd {p['disk_s']:.2f}, Ω {p['overhead_s']:.2f} s; "
                f"error {a['mean_abs_error']:.1%} (CPU s {_pct(a['mean_abs_cpu_error'])})",
                fontsize=9,
            )
        else:
            wall1, cores = doc["probe"]["wall_k1_s"], doc["machine"]["cores"]
            k_all = list(range(1, max(ks) + 1))
            ax.plot(k_all, [wall1] * len(k_all), "--", label="Ω as a delay (physics today)")
            ax.plot(k_all, [wall1 * max(1, k / cores) for k in k_all], ":", label="Ω as CPU work")
            ax.set_title(
                f"bare start-up: CPU/wall at k=1 = {doc['probe']['cpu_per_wall_k1']:.2f}", fontsize=9
            )
        ax.set_xticks(range(1, max(ks) + 1))
        ax.set_xlabel("concurrent tasks k")
        ax.set_ylabel("mean task wall time (s)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
        plt.close(fig)
