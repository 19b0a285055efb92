"""A Python program of mrsched's images run as in a pod (process mode): the kubernetes client's in-cluster
loader reads the ServiceAccount token and CA from this pod's directory, which the emulated kubelet filled as a
kubelet fills the projected ``kube-api-access`` volume, instead of /var/run/secrets/kubernetes.io/serviceaccount,
which a process on this machine cannot have. The program itself is unchanged: it finds
KUBERNETES_SERVICE_HOST set and loads in-cluster config as it would in a cluster.

    python -m mrsched.emulator.incluster SA_DIR MODULE [ARG...]
"""

from __future__ import annotations

import runpy
import sys

from kubernetes.config import incluster_config


def main(argv: list[str]) -> None:
    sa_dir, module, *args = argv
    incluster_config.SERVICE_TOKEN_FILENAME = f"{sa_dir}/token"
    incluster_config.SERVICE_CERT_FILENAME = f"{sa_dir}/ca.crt"
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
