"""J_IO (seed 002 §3.3.1): the thesis' custom I/O-heavy job, "modelled on ETL jobs": it reads 1.5 GB from HDFS
and writes 15 GB back. Map-only here (its reducers are not stated; the experiments measure the map phase).

Each map reads its split, normalises every line (strips trailing whitespace, upper-cases it: a stand-in for an
ETL transform, deliberately cheap so the job stays I/O-bound) and writes the transformed lines
``--output-factor`` times (default 10, the thesis' 15 GB / 1.5 GB), to its final ``part-m-NNNNN``. A retried
attempt writes the same bytes.
"""

from __future__ import annotations

from mrworker.errors import UsageError
from mrworker.task import Sink, Task


class Jio:
    map_only = True
    reads_input = True

    def map(self, task: Task) -> None:
        if task.output_factor < 1:
            raise UsageError("jio needs --output-factor N, N >= 1")

        def write(out: Sink) -> None:
            for block in task.input_blocks():
                lines = block.splitlines()
                task.counters.records_in += len(lines)
                transformed = b"".join(line.rstrip().upper() + b"\n" for line in lines)
                for _ in range(task.output_factor):
                    out.write(transformed)
                task.counters.records_out += len(lines) * task.output_factor

        task.commit_part(write, map_only=True)

    def reduce(self, task: Task) -> None:
        raise UsageError("jio is map-only: it has no reduce")
