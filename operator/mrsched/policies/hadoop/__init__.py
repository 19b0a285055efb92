"""Hadoop 1.2.1's slot schedulers, the baselines: FIFO (JobQueueTaskScheduler), Fair and Capacity, on the slots and
locality helpers they share (:mod:`.slots`)."""
