"""The pure job model: settings, a job's spec and state rebuilt from its pods, pod manifests and statuses, the core's
cluster snapshot, metrics definitions."""
