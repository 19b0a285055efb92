"""Process mode runs a pod's container as a local process; for mrsched's own images that process is this
installation's program, as the image's entrypoint would run it (the chart's operator Deployment runs in
the local cluster). Other images run their container's command as written, as before."""

from __future__ import annotations

import sys
from typing import Any

#: repository -> (the image's entrypoint, its default arguments), as operator/Dockerfile and workers/Dockerfile
#: build them.
LOCAL_IMAGES: dict[str, tuple[list[str], list[str]]] = {
    "ghcr.io/mrsched/mrsched": (["mrsched"], ["run"]),
    "ghcr.io/mrsched/worker": (["python", "-m", "mrworker"], []),
}
#: Programs of those images, as this installation runs them (the image's PATH is not this machine's).
LOCAL_PROGRAMS: dict[str, list[str]] = {
    "mrsched": [sys.executable, "-m", "mrsched"],
    "python": [sys.executable],
    "python3": [sys.executable],
}


def repository(image: str) -> str:
    """``image`` without its tag or digest."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def is_local(image: str) -> bool:
    return repository(image) in LOCAL_IMAGES


def local_command(container: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The container's command line as (program, arguments): for one of mrsched's images, its command (else the
    image's entrypoint) and args (else the image's, when the command is the image's too), the program mapped to
    this installation; for any other image, no program and command + args as written (empty when it has no
    command: no entrypoint is known). The program is a path on this machine, the arguments are the container's:
    only they may name container paths (a volume's mount path) to map to local directories."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    image = container.get("image", "")
    if not is_local(image):
        return [], command + args
    entrypoint, default_args = LOCAL_IMAGES[repository(image)]
    if not command:
        command, args = entrypoint, (args if "args" in container else default_args)
    if command[0] in LOCAL_PROGRAMS:
        return LOCAL_PROGRAMS[command[0]], command[1:] + args
    return [], command + args
