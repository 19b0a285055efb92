"""Diagnosis (seed 002 ch.6): the policy (:mod:`.policy`) and its diagnostic model (:mod:`.model`)."""
