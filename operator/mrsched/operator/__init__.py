"""The Kubernetes operator: MapReduceJob resources in, task pods placed by the scheduling core out.

Layers inside: ``config`` (typed settings), ``jobspec`` and ``jobstate`` (pure: a job's spec and its state
rebuilt from its pods), ``pods`` (pure: pod manifests and pod-status parsing), ``snapshot`` (pure: the core's
cluster snapshot), ``loop`` (the heartbeat that ties them together), ``kubeapi`` (the only module that talks
to the API server), ``handlers`` (thin kopf handlers) and ``metrics``.
"""
