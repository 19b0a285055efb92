"""What the policies learn from and what the operator learns about nodes: outcomes fed to the policies, probe tasks,
learned profiles, the soft-fault monitor's edge."""
