"""Free TCP ports on loopback, handed out once per process so that two parts of one harness never collide."""

from __future__ import annotations

import socket
import threading

_handed_out: set[int] = set()
_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now. The kernel picks it; another process could still take it before we
    bind, which only a retry can cure, but this process never hands out the same port twice."""
    with _lock:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise RuntimeError("no free loopback port after 100 tries")


def is_listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
