"""mrsched's own policy for Kubernetes: shortest predicted work first, each task where it finishes soonest."""
