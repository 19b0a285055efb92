"""mrworker: the program every MapReduce task pod runs.

It reads its input split from the shared data volume, runs one map or reduce task of a built-in application
(wordcount, grep, sort, terasort, pi, and the generators randomwriter, randomtextwriter and teragen), commits
its output atomically, and leaves a usage report in the container's termination message.

Standard library only, so that the worker image stays a slim Python base. Layout and formats: workers/README.md.
"""

__version__ = "0.1.0"
