"""mrworker: the program every MapReduce task pod (and node probe pod) runs.

It reads its input split from the shared data volume, runs one map or reduce task of a built-in application
(wordcount, grep, sort, terasort, pi, and the generators randomwriter, randomtextwriter and teragen), commits
its output atomically, and leaves a usage report in the container's termination message. ``mrworker probe``
instead does a known amount of CPU and disk work that measures the node (``mrworker.probe``).

Standard library only, so that the worker image stays a slim Python base. Layout and formats: workers/README.md.
"""

__version__ = "0.1.0"
