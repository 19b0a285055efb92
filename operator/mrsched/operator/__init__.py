"""The Kubernetes operator: MapReduceJob resources in, task pods placed by the scheduling core out.

Layers inside, each importing only those below it (import-linter): ``process`` (the command, kopf's handlers,
the runner), ``scheduling`` (the round: ``loop`` reads, reconciles and places every heartbeat through the core's
framework), ``jobs`` and ``learning`` (a round's pass over the jobs, their reconciliation and status; what the
policies and the health monitor learn from), ``kube`` (the only modules that talk to the API server) and
``model`` (pure: settings, a job's spec and state rebuilt from its pods, pod manifests, the core's snapshot).
"""
