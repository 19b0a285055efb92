"""The operator's process: the command (main), kopf's handlers, the runner that starts caches, leadership and the
loop."""
