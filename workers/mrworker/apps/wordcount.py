"""WordCount (Hadoop's ``examples/WordCount``): words split on ASCII whitespace, counted, summed per word.

Output: ``word<TAB>count`` lines, each reducer's part sorted by word's bytes.
"""

from __future__ import annotations

from mrworker.apps.common import reduce_sum
from mrworker.collect import CountCollector
from mrworker.task import Task


class WordCount:
    map_only = False
    reads_input = True

    def map(self, task: Task) -> None:
        out = CountCollector(
            task.paths.work_dir,
            task.reduces,
            task.counters,
            combiner=task.combiner,
            buffer_bytes=task.sort_buffer_bytes,
            merge_factor=task.merge_factor,
        )
        for block in task.input_blocks():
            task.counters.records_in += block.count(b"\n") + (not block.endswith(b"\n"))
            out.add(block.split())
        task.commit_map_output(out.finish)

    def reduce(self, task: Task) -> None:
        reduce_sum(task)
