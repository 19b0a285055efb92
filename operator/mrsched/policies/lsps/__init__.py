"""LsPS (seed 004): the policy (:mod:`.policy`) and its job-size statistics (:mod:`.stats`)."""
