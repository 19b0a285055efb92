"""The scheduling core: pure, synchronous, no Kubernetes. Policies and the simulator build on it."""
