"""The built-in applications, each a module with the map and reduce functions of one Hadoop example.

An application is an object with ``map_only`` (generators write final output from their maps), ``reads_input``
and ``map(task)`` / ``reduce(task)``. To add one, write a module like these and register it in ``APPS``.
"""

from __future__ import annotations

from typing import Protocol

from mrworker.apps import generators, grep, jio, pi, sort, wordcount
from mrworker.task import Task


class App(Protocol):
    map_only: bool
    reads_input: bool

    def map(self, task: Task) -> None: ...
    def reduce(self, task: Task) -> None: ...


APPS: dict[str, App] = {
    "wordcount": wordcount.WordCount(),
    "grep": grep.Grep(),
    "sort": sort.Sort(),
    "terasort": sort.TeraSort(),
    "pi": pi.Pi(),
    "randomwriter": generators.RandomWriter(),
    "randomtextwriter": generators.RandomTextWriter(),
    "teragen": generators.TeraGen(),
    "jio": jio.Jio(),
}
