"""The data claim a tenant namespace needs on the local cluster: the chart's default task volume is the
ReadWriteMany PersistentVolumeClaim ``mrsched-data`` of each job's namespace (docs/security.md). Here a
PersistentVolume pre-bound to it, which the real kube-controller-manager binds; kube-scheduler's VolumeBinding
then admits pods that mount it (an unbound claim makes them unschedulable). The emulated kubelet runs every
volume from its own data directory, as a real one runs it from the volume's storage."""

from __future__ import annotations

from typing import Any

#: The operator's default claim (mrsched.operator.model.config.DEFAULT_DATA_CLAIM; the layers keep this package from
#: importing the operator's).
DATA_CLAIM = "mrsched-data"


def data_claim_manifests(namespace: str, claim: str = DATA_CLAIM) -> list[dict[str, Any]]:
    """A PersistentVolume (``data-<namespace>``, cluster-scoped: delete it with the namespace) and the claim."""
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"data-{namespace}", "labels": {"app.kubernetes.io/part-of": "mrsched"}},
        "spec": {
            "capacity": {"storage": "1Ti"},
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "mrsched-local",
            "persistentVolumeReclaimPolicy": "Retain",
            # A PersistentVolume's source (Pod Security checks pods, not volumes): never mounted here.
            "hostPath": {"path": f"/srv/mrsched/{namespace}"},
            "claimRef": {"namespace": namespace, "name": claim},
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "mrsched-local",
            "resources": {"requests": {"storage": "1Ti"}},
            "volumeName": f"data-{namespace}",
        },
    }
    return [volume, pvc]
