"""A local Kubernetes control plane for tests and development: kwokctl with locally built binaries, a
Prometheus that scrapes the node emulator, and the emulator itself (see docs/local-cluster.md)."""
