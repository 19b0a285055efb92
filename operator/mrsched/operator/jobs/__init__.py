"""Jobs: a round's pass over them (jobpass, jobcache), their reconciliation and status, whether they can run (fit), the
admin's job policy, pod writes."""
