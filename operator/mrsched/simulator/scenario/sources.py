"""Where each numeric default of the scenario models comes from."""

from __future__ import annotations

#: Where each numeric default of the models below comes from (code defaults are constants too), keyed
#: ``Model.alias`` and valued as a scenario's ``sources`` are (mrsched.core.provenance's kinds).
#: tests/unit/project/test_constant_sources.py fails on a numeric default without an entry and on an entry naming none.
DEFAULT_SOURCES: dict[str, str] = {
    "FaultSpec.startS": "assumption: a fault that names no start is there from time 0",
    "FaultSpec.intensity": "assumption: one busy loop per core, one hog stream or one lost core unless the scenario "
    "says (seed 002 §5.2.6 states no intensity)",
    "MetricsSpec.scrapeS": "assumption: a 5 s scrape, fine enough to follow tasks of a minute (Prometheus's own "
    "default is 1 min)",
    "MetricsSpec.rateWindowS": "assumption: two scrapes per rate() window, the fewest rate() can use",
    "MetricsSpec.maxAgeS": "assumption: the operator's --metrics-max-age default (30 s, six missed scrapes)",
    "MonitorSpec.windowS": "paper: seed 002 Fig 6.2 plots per-server throughput per minute; one-minute windows",
    "ClusterSpec.mapSlots": "spec: Hadoop 1.2.1 mapred.tasktracker.map.tasks.maximum = 2 (mapred-default.xml)",
    "ClusterSpec.reduceSlots": "spec: Hadoop 1.2.1 mapred.tasktracker.reduce.tasks.maximum = 2 (mapred-default.xml)",
    "ClusterSpec.heartbeatS": "spec: Hadoop 0.20's minimum TaskTracker heartbeat interval, 3 s (MRConstants "
    "HEARTBEAT_INTERVAL_MIN; Hadoop 1.1+ lowered the minimum to 0.3 s)",
    "HintsSpec.cpu": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "HintsSpec.memory": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "HintsSpec.disk": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "HintsSpec.network": "assumption: the middle of seed 000's 1-10 scale for a job that gives no hint",
    "JobSpec.submitS": "assumption: a job that names no submission time arrives at the start",
    "JobSpec.maps": "assumption: one map for a job that names no count (every scenario states its own)",
    "JobSpec.reduces": "spec: Hadoop 1.2.1 mapred.reduce.tasks = 1 (mapred-default.xml)",
    "JobSpec.inputMBPerMap": "spec: Hadoop 1.2.1 dfs.block.size = 64 MB (hdfs-default.xml), one split per block",
    "JobSpec.replication": "spec: HDFS dfs.replication = 3 (hdfs-default.xml)",
    "JobSpec.priority": "assumption: every job at the same (Hadoop's NORMAL) priority unless a scenario sets one",
    "JobSpec.weight": "spec: Hadoop Fair Scheduler's default weight, 1.0",
    "JobSpec.repeat": "assumption: a job is submitted once unless the scenario repeats it",
    "JobSpec.everyS": "assumption: no gap between repeats unless the scenario gives one",
    "JobSpec.reduceSlowstart": "spec: Hadoop 1.2.1 mapred.reduce.slowstart.completed.maps = 0.05 (mapred-default.xml)",
    "JobSpec.cpuRequest": "paper: seed 002 §2.5 (Eq 2.1), a YARN container is 1 CPU core and typically 1 GB",
    "JobSpec.memoryRequestMB": "paper: seed 002 §2.5 (Eq 2.1), a YARN container is 1 CPU core and typically 1 GB",
    "TraceSpec.timeScale": "assumption: a trace is replayed at its recorded times unless the scenario scales it",
    "TraceSpec.sizeScale": "assumption: a trace is replayed at its recorded sizes unless the scenario scales it",
    "TraceSpec.blockMB": "spec: Hadoop 2 dfs.blocksize = 128 MB (hdfs-default.xml), one map per block",
    "YarnSpec.amMemoryMB": "spec: SLS 3.3.5 yarn.sls.am.container.memory = 1024 (SLSConfiguration)",
    "YarnSpec.amVcores": "spec: SLS 3.3.5 yarn.sls.am.container.vcores = 1 (SLSConfiguration)",
}
