"""Kubernetes I/O: the API client and its throttling, the watch caches and informers, leases and leadership."""
