"""The scheduling round: the loop that reads, reconciles and places every heartbeat, the quiet-round skip, the pods a
round creates beside the policies', canary maps, the live-metrics gauges."""
