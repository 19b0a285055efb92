"""mrsched: a Kubernetes operator that runs MapReduce jobs on heterogeneous clusters and places their pods
with learning policies from the research literature."""

__version__ = "0.1.0"
