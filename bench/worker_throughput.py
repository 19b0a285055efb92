"""Map throughput and peak memory of the worker program, as the workers issue asks:

    python bench/worker_throughput.py [--sort-buffer-mb 32] [--factor 8] [--out bench/results/worker-throughput.txt]

Each map runs as a real process through the image's entrypoint (``python -m mrworker``) over one input of
``factor`` x the sort buffer, so sort must spill ``factor`` times and merge. Throughput is input MB over the
process's wall time (interpreter start included), per map task; memory is the report's peak resident size.
Aims: wordcount >= 30 MB/s, sort >= 50 MB/s, peak memory <= sort buffer + 64 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def worker(data: Path, log: Path, *args: str) -> tuple[dict[str, object], float]:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO / "workers"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "MRSCHED_DATA_DIR": str(data),
        "MRSCHED_TERMINATION_LOG": str(log),
    }
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mrworker", *args], env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(log.read_text()), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sort-buffer-mb", type=int, default=32)
    parser.add_argument("--factor", type=int, default=8, help="input size as a multiple of the sort buffer")
    parser.add_argument("--reduces", type=int, default=4)
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    size = args.factor * args.sort_buffer_mb * MIB

    with tempfile.TemporaryDirectory(prefix="mrsched-bench-") as tmp:
        data, log = Path(tmp), Path(tmp) / "report.json"
        # Each input by a one-map generator job: its map, then its commit, which publishes the part.
        for app, output, amount in (
            ("randomtextwriter", "text", ["--bytes-per-map", str(size)]),
            ("randomwriter", "random", ["--bytes-per-map", str(size)]),
            ("teragen", "tera", ["--rows", str(size // 100)]),
        ):
            for command in ("map", "commit-job"):
                worker(data, log, command, "--app", app, "--reduces", "0", *amount, "--output", output)

        runs = [
            ("wordcount", "text", [], 30.0),
            ("grep", "text", ["--pattern", "[a-z]*ing[a-z]*"], None),
            ("sort", "tera", [], 50.0),
            ("sort", "random", [], 50.0),
            ("terasort", "tera", [], None),
        ]
        rows = []
        for app, source, extra, aim in runs:
            report, wall = worker(
                data,
                log,
                "map",
                "--app",
                app,
                "--input",
                source,
                "--output",
                f"out-{app}-{source}",
                "--reduces",
                str(args.reduces),
                "--sort-buffer-mb",
                str(args.sort_buffer_mb),
                *extra,
            )
            read = sum(p.stat().st_size for p in (data / source).glob("part-*"))
            rate = read / 1e6 / wall
            peak = int(report["peakMemoryBytes"]) / MIB  # type: ignore[call-overload]
            rows.append((app, source, read / MIB, wall, rate, aim, peak))

    limit = args.sort_buffer_mb + 64
    lines = [
        f"# worker map throughput, {platform.node()} ({os.cpu_count()} cores), Python {platform.python_version()}",
        f"# sort buffer {args.sort_buffer_mb} MiB, input {args.factor}x the buffer, {args.reduces} reduces; "
        f"memory aim <= {limit} MiB",
        f"{'app':<10} {'input':<22} {'MiB':>6} {'wall s':>7} {'MB/s':>7} {'aim':>6} {'peak MiB':>9}  verdict",
    ]
    described = {
        "text": "randomtextwriter text",
        "random": "randomwriter records",
        "tera": "teragen 100-byte rec.",
    }
    for app, source, mib, wall, rate, aim, peak in rows:
        ok = (aim is None or rate >= aim) and peak <= limit
        lines.append(
            f"{app:<10} {described[source]:<22} {mib:>6.0f} {wall:>7.2f} {rate:>7.1f} "
            f"{'-' if aim is None else f'>={aim:.0f}':>6} {peak:>9.1f}  {'ok' if ok else 'MISSED'}"
        )
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
