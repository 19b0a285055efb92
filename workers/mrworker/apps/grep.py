"""Grep (Hadoop's ``examples/Grep``, its first job): every match of a regular expression in each line,
counted per distinct match (``RegexMapper`` with group 0, then ``LongSumReducer``).

Output: ``match<TAB>count`` lines sorted by match. Hadoop's second job, which re-sorts by count, is left to the
reader of the output.
"""

from __future__ import annotations

import re

from mrworker.apps.common import reduce_sum
from mrworker.errors import UsageError
from mrworker.splits import split_lines
from mrworker.task import Task


def compile_pattern(pattern: str) -> re.Pattern[bytes]:
    if not pattern:
        raise UsageError("grep needs --pattern REGEX")
    try:
        return re.compile(pattern.encode())
    except re.error as err:
        raise UsageError(f"grep pattern {pattern!r} is not a valid regular expression: {err}") from None


class Grep:
    map_only = False
    reads_input = True

    def map(self, task: Task) -> None:
        regex = compile_pattern(task.pattern)
        out = task.count_collector()
        for block in task.input_blocks():
            lines = split_lines(block)
            task.counters.records_in += len(lines)
            if regex.groups == 0:
                out.add(match for line in lines for match in regex.findall(line))
            else:
                out.add(m.group(0) for line in lines for m in regex.finditer(line))
        task.commit_map_output(out.finish)

    def reduce(self, task: Task) -> None:
        reduce_sum(task)
