"""kube-scheduler's default profile as a policy (:mod:`.default`), with its scheduling queue (:mod:`.queue`)."""
