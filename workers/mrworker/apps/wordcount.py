"""WordCount (Hadoop's ``examples/WordCount``): words split on ASCII whitespace, counted, summed per word.

Output: ``word<TAB>count`` lines, each reducer's part sorted by word's bytes.
"""

from __future__ import annotations

from mrworker.apps.common import reduce_sum
from mrworker.task import Task


class WordCount:
    map_only = False
    reads_input = True

    def map(self, task: Task) -> None:
        out = task.count_collector()
        for block in task.input_blocks():
            task.counters.records_in += block.count(b"\n") + (not block.endswith(b"\n"))
            out.add(block.split())
        task.commit_map_output(out.finish)

    def reduce(self, task: Task) -> None:
        reduce_sum(task)
