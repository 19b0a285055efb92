"""ThroughputScheduler (seed 002 ch.3): the policy (:mod:`.policy`) and its performance model (:mod:`.model`)."""
