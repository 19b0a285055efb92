"""The worker's command line: ``mrworker {map,reduce,commit-job} --app APP ...`` or ``mrworker probe``.

Every option can also come from the environment (``MRSCHED_<NAME>``, listed in ``--help``), which is how the
operator passes a task's coordinates; arguments win over the environment. Exit codes: 0 done, 1 the task
failed (bad input, missing map output, I/O error), 2 bad arguments, 3 the job cannot run with this output
(it exists and is another job's or nobody's, and the job did not say ``--overwrite``; or another job took
it over meanwhile: permanent, the operator fails the job instead of retrying), 143 terminated by SIGTERM.
Whatever the outcome, the usage report goes to the termination-message path and to stdout.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType
from typing import NoReturn

from mrworker.apps import APPS
from mrworker.committer import commit_job as commit_output
from mrworker.errors import OutputConflict, TaskError, Terminated, UsageError
from mrworker.layout import checked_id
from mrworker.probe import PROBE_KINDS, Probe, run_probe
from mrworker.report import Counters, render, write
from mrworker.splits import Split, resolve
from mrworker.task import Task, default_attempt_id

DEFAULT_TERMINATION_LOG = "/dev/termination-log"
TERMINATION_LOG_ENV = "MRSCHED_TERMINATION_LOG"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"MRSCHED_{name}", default)


def _env_int(name: str, default: int) -> int:
    value = _env(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"MRSCHED_{name}={value!r} is not an integer") from None


def _env_float(name: str, default: float) -> float:
    value = _env(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"MRSCHED_{name}={value!r} is not a number") from None


def _env_bool(name: str) -> bool:
    value = (_env(name) or "").strip().lower()
    if value in {"true", "1", "yes"}:
        return True
    if value in {"", "false", "0", "no"}:
        return False
    raise UsageError(f"MRSCHED_{name}={value!r} is not a boolean (true, 1, yes; false, 0, no)")


def _env_list(name: str) -> list[str]:
    value = _env(name)
    return [v for v in value.split(",") if v] if value else []


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mrworker",
        description="Run one map or reduce task of a built-in MapReduce application, or a node probe.",
        epilog="Each option defaults to the environment variable MRSCHED_<OPTION> (upper case, '-' as '_').",
    )
    p.add_argument(
        "command",
        nargs="?",
        default=_env("TASK_TYPE"),
        choices=["map", "reduce", "commit-job", "probe"],
        help="task type (MRSCHED_TASK_TYPE)",
    )
    p.add_argument("--app", default=_env("APP"), choices=sorted(APPS), help="the application (MRSCHED_APP)")
    p.add_argument("--index", type=int, default=_env_int("TASK_INDEX", 0), help="task index within its type")
    p.add_argument("--attempt", type=int, default=_env_int("ATTEMPT", 0), help="attempt number, from 0")
    p.add_argument(
        "--job-uid",
        default=_env("JOB_UID", "manual"),
        help="the job's unique id: it owns the output (default 'manual', for runs by hand)",
    )
    p.add_argument(
        "--attempt-id",
        default=_env("ATTEMPT_ID"),
        help="this attempt's unique id, names its scratch and temporary files (the pod's UID; default "
        "<type letter><index>-a<attempt>, e.g. m00003-a0)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        default=_env_bool("OVERWRITE"),
        help="replace an existing output that is not this job's (MRSCHED_OVERWRITE=true); default: refuse it",
    )
    p.add_argument("--maps", type=int, default=_env_int("MAPS", 1), help="number of map tasks in the job")
    p.add_argument("--reduces", type=int, default=_env_int("REDUCES", 1), help="number of reduce tasks")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=Path(_env("DATA_DIR", "/data") or "/data"),
        help="the shared data volume; relative paths are under it (default /data)",
    )
    p.add_argument(
        "--input",
        action="append",
        help="input file or directory (repeatable; MRSCHED_INPUT is comma-separated)",
    )
    p.add_argument(
        "--split",
        action="append",
        metavar="PATH:START:LENGTH",
        help="explicit input split of this map (repeatable); default: map i's share of --input",
    )
    p.add_argument("--output", default=_env("OUTPUT"), help="output directory")
    p.add_argument(
        "--job-dir",
        default=_env("JOB_DIR"),
        help="intermediate data of this job (default <output>/_temporary/intermediate)",
    )
    p.add_argument(
        "--sort-buffer-mb",
        type=int,
        default=_env_int("SORT_BUFFER_MB", 100),
        help="map output buffer and merge memory, MiB (Hadoop's io.sort.mb; default 100)",
    )
    p.add_argument(
        "--merge-factor",
        type=int,
        default=_env_int("MERGE_FACTOR", 64),
        help="segments merged at once (Hadoop's io.sort.factor; default 64)",
    )
    p.add_argument(
        "--no-combiner",
        dest="combiner",
        action="store_false",
        help="wordcount, grep: write every occurrence instead of per-map sums",
    )
    p.add_argument("--pattern", default=_env("PATTERN", ""), help="grep: regular expression (Python syntax)")
    p.add_argument("--samples", type=int, default=_env_int("SAMPLES", 0), help="pi: points per map")
    p.add_argument(
        "--bytes-per-map",
        type=int,
        default=_env_int("BYTES_PER_MAP", 0),
        help="randomwriter, randomtextwriter: bytes each map writes",
    )
    p.add_argument("--rows", type=int, default=_env_int("ROWS", 0), help="teragen: records per map")
    p.add_argument(
        "--output-factor",
        type=int,
        default=_env_int("OUTPUT_FACTOR", 10),
        help="jio: output bytes per input byte (default 10: 1.5 GB in, 15 GB out)",
    )
    p.add_argument("--seed", type=int, default=_env_int("SEED", 0), help="generators: job seed")
    p.add_argument(
        "--wait-for-maps",
        type=float,
        default=float(_env("WAIT_FOR_MAPS", "0") or 0),
        help="reduce: seconds to wait for map outputs still being written (slow-start)",
    )
    p.add_argument(
        "--probe-kind",
        default=_env("PROBE_KIND"),
        help=f"probe: which probe ({', '.join(PROBE_KINDS)}); see workers/README.md",
    )
    p.add_argument(
        "--probe-scale",
        type=float,
        default=_env_float("PROBE_SCALE", 1.0),
        help="probe: multiplies the probe's CPU and disk work (default 1)",
    )
    p.add_argument(
        "--termination-log",
        type=Path,
        default=Path(_env("TERMINATION_LOG", DEFAULT_TERMINATION_LOG) or DEFAULT_TERMINATION_LOG),
        help="where the usage report goes (the container's terminationMessagePath)",
    )
    return p


def build_probe(args: argparse.Namespace) -> Probe:
    if not args.probe_kind:
        raise UsageError(
            f"mrworker probe: give --probe-kind or MRSCHED_PROBE_KIND ({', '.join(PROBE_KINDS)})"
        )
    return Probe(args.probe_kind, args.probe_scale, args.data_dir)


def build_task(args: argparse.Namespace, counters: Counters) -> Task:
    if args.command is None:
        raise UsageError(
            "mrworker: give the task type (map, reduce, commit-job or probe) or MRSCHED_TASK_TYPE"
        )
    if args.app is None:
        raise UsageError("mrworker: give --app or MRSCHED_APP")
    if not args.output:
        raise UsageError("mrworker: give --output or MRSCHED_OUTPUT")
    app = APPS[args.app]
    if args.maps < 1:
        raise UsageError(f"--maps must be at least 1, not {args.maps}")
    if args.reduces < (0 if app.map_only else 1):
        raise UsageError(f"--reduces must be at least 1 for {args.app}, not {args.reduces}")
    count = args.maps if args.command == "map" else args.reduces
    if args.command != "commit-job" and not 0 <= args.index < count:
        raise UsageError(f"--index {args.index} is outside 0..{count - 1} for a {args.command} of this job")
    if args.attempt < 0 or args.sort_buffer_mb < 1 or args.merge_factor < 2:
        raise UsageError("--attempt must be >= 0, --sort-buffer-mb >= 1 and --merge-factor >= 2")
    job_uid = checked_id(args.job_uid or "", "--job-uid")
    attempt_id = checked_id(
        default_attempt_id(args.command, args.index, args.attempt)
        if args.attempt_id is None
        else args.attempt_id,
        "--attempt-id",
    )
    data_dir: Path = args.data_dir
    output = resolve(args.output, data_dir)
    default_job_dir = output / "_temporary" / job_uid / "intermediate"
    return Task(
        app=args.app,
        kind=args.command,
        index=args.index,
        attempt=args.attempt,
        maps=args.maps,
        reduces=args.reduces,
        data_dir=data_dir,
        job_dir=resolve(args.job_dir, data_dir) if args.job_dir else default_job_dir,
        output=output,
        inputs=[resolve(i, data_dir) for i in args.input or _env_list("INPUT")],
        splits=[Split.parse(s, data_dir) for s in args.split or _env_list("SPLITS")] or None,
        sort_buffer_bytes=args.sort_buffer_mb << 20,
        merge_factor=args.merge_factor,
        combiner=args.combiner,
        pattern=args.pattern,
        samples=args.samples,
        bytes_per_map=args.bytes_per_map,
        rows=args.rows,
        output_factor=args.output_factor,
        seed=args.seed,
        wait_for_maps_s=args.wait_for_maps,
        job_uid=job_uid,
        attempt_id=attempt_id,
        overwrite=args.overwrite,
        shown_output=_shown(output, data_dir),
        counters=counters,
    )


def _shown(path: Path, data_dir: Path) -> str:
    """``path`` as the job's spec names it: relative to the data volume when it is on it."""
    try:
        return str(path.relative_to(data_dir))
    except ValueError:
        return str(path)


def run(task: Task) -> None:
    app = APPS[task.app]
    if task.kind == "commit-job":
        commit_job(task, map_only=app.map_only or task.reduces == 0)
        return
    if task.kind == "reduce" and app.map_only:
        raise UsageError(f"{task.app} is map-only: it has no reduce tasks")
    output = task.output_dir
    output.claim(overwrite=task.overwrite, started=task.job_dir.exists)
    if output.committed():
        return  # a duplicate attempt outliving its job's commit: everything it would write is there
    paths = task.paths
    paths.prepare()
    try:
        if task.kind == "map":
            app.map(task)
        else:
            app.reduce(task)
    finally:
        paths.cleanup()


def commit_job(task: Task, *, map_only: bool) -> None:
    """Hadoop's commitJob: every part of this job's run into the output, temporary and intermediate data
    removed, ``_SUCCESS`` last (``mrworker.committer.commit_job``); idempotent."""
    count = task.maps if map_only else task.reduces
    names = [f"part-{'m' if map_only else 'r'}-{i:05d}" for i in range(count)]
    commit_output(task.output_dir, task.job_dir, names, overwrite=task.overwrite)
    task.counters.records_out = count


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    counters = Counters()
    signal.signal(signal.SIGTERM, _terminate)
    log_path = Path(os.environ.get(TERMINATION_LOG_ENV) or DEFAULT_TERMINATION_LOG)
    error, code = "", 0
    try:
        args = parser().parse_args(argv)
        log_path = args.termination_log
        if args.command == "probe":
            run_probe(build_probe(args), counters)
        else:
            run(build_task(args, counters))
    except UsageError as err:
        error, code = str(err), 2
    except OutputConflict as err:
        error, code = str(err), 3
    except TaskError as err:
        error, code = str(err), 1
    except Terminated:
        error, code = "terminated by SIGTERM before the task finished", 143
    except OSError as err:
        error, code = f"I/O error: {err}", 1
    except Exception as err:  # a bug: say so, and keep the traceback in the log
        traceback.print_exc()
        error, code = f"internal error: {type(err).__name__}: {err}", 1
    if error:
        print(f"mrworker: {error}", file=sys.stderr)
    write(render(counters, error=error), log_path)
    return code
