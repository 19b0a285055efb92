"""The discrete-event cluster simulator: replays workloads on modelled heterogeneous clusters under any policy."""
