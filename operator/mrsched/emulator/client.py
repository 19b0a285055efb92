"""A small client for the emulator's control endpoint (see :mod:`mrsched.emulator.control`)."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from typing import Any


class EmulatorError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"emulator answered {status}: {message}")
        self.status = status


class EmulatorClient:
    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("error", detail)
            raise EmulatorError(err.code, detail) from None

    def nodes(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/nodes")
        return result

    def metrics_text(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=self.timeout_s) as resp:
            return str(resp.read().decode())

    def heartbeat_gaps(self) -> dict[str, float]:
        result: dict[str, float] = self._call("GET", "/heartbeat-gaps")
        return result

    def set_heartbeats(self, node: str, enabled: bool) -> None:
        self._call("POST", f"/nodes/{node}/heartbeats", {"enabled": enabled})

    def shut_down_node(self, node: str, grace_s: float = 30.0) -> list[str]:
        return list(self._call("POST", f"/nodes/{node}/shutdown", {"graceS": grace_s})["endedPods"])

    def delete_node(self, node: str) -> list[str]:
        lost: list[str] = self._call("DELETE", f"/nodes/{node}")["lostPods"]
        return lost

    def add_fault(
        self,
        node: str,
        kind: str,
        *,
        intensity: float = 1.0,
        start_in_s: float = 0.0,
        duration_s: float | None = None,
    ) -> None:
        self._call(
            "POST",
            f"/nodes/{node}/faults",
            {"kind": kind, "intensity": intensity, "startInS": start_in_s, "durationS": duration_s},
        )

    def clear_faults(self, node: str) -> None:
        self._call("DELETE", f"/nodes/{node}/faults")

    def evict(self, namespace: str, pod: str) -> None:
        self._call("POST", f"/pods/{namespace}/{pod}/evict")

    def fail_image_pulls(
        self, image: str, for_s: float, *, backoff_s: float | None = None
    ) -> dict[str, float]:
        """Pulls of ``image`` fail for the next ``for_s`` seconds (0 or less clears it); ``backoff_s`` sets the
        first pull back-off from now on. Returns the seconds left for each failing image."""
        body = {"image": image, "forS": for_s, "backoffS": backoff_s}
        failing: dict[str, float] = self._call("POST", "/image-pull-failures", body)["failing"]
        return failing
