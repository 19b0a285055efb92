"""The task usage report: what a finished task consumed, as its container leaves it in the termination message.

Version 1, a JSON object under the kubelet's 4 KiB termination-message limit::

    {"v": 1, "status": "succeeded" | "failed", "cpuUserS": float, "cpuSystemS": float,
     "readBytes": int, "writtenBytes": int, "networkBytes": int, "recordsIn": int, "recordsOut": int,
     "peakMemoryBytes": int, "wallS": float, "error": str (on failure)}

The learning policies read it (seed 002 ch.4 measures a task's CPU time and bytes read and written; seed 000
judges decisions by the load they caused). The worker program and the emulator's model mode both write it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

REPORT_VERSION = 1
_MAX_BYTES = 4096


@dataclass(frozen=True)
class TaskReport:
    status: Literal["succeeded", "failed"]
    cpu_user_s: float = 0.0
    cpu_system_s: float = 0.0
    read_bytes: int = 0
    written_bytes: int = 0
    network_bytes: int = 0
    records_in: int = 0
    records_out: int = 0
    peak_memory_bytes: int = 0
    wall_s: float = 0.0
    error: str = ""

    _KEYS: ClassVar[dict[str, str]] = {
        "cpu_user_s": "cpuUserS",
        "cpu_system_s": "cpuSystemS",
        "read_bytes": "readBytes",
        "written_bytes": "writtenBytes",
        "network_bytes": "networkBytes",
        "records_in": "recordsIn",
        "records_out": "recordsOut",
        "peak_memory_bytes": "peakMemoryBytes",
        "wall_s": "wallS",
    }

    def to_json(self) -> str:
        """Compact JSON; a long error is shortened so that the whole report stays under 4 KiB."""
        body: dict[str, Any] = {"v": REPORT_VERSION, "status": self.status}
        for field, key in self._KEYS.items():
            value = asdict(self)[field]
            body[key] = round(value, 3) if isinstance(value, float) else value
        if self.error:
            body["error"] = self.error
        text = json.dumps(body, separators=(",", ":"))
        while len(text.encode()) > _MAX_BYTES and body.get("error"):
            body["error"] = body["error"][
                : max(0, len(body["error"]) - (len(text.encode()) - _MAX_BYTES) - 8)
            ]
            body["error"] += "…"
            text = json.dumps(body, separators=(",", ":"))
        return text

    @classmethod
    def from_json(cls, text: str) -> TaskReport:
        """Parse a report; raises ValueError naming what is wrong (not JSON, unknown version, bad field)."""
        try:
            body = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"task report is not JSON: {err}") from None
        if not isinstance(body, dict) or body.get("v") != REPORT_VERSION:
            raise ValueError(
                f"task report version {body.get('v') if isinstance(body, dict) else None!r} "
                f"is not {REPORT_VERSION}"
            )
        if body.get("status") not in ("succeeded", "failed"):
            raise ValueError(f"task report status {body.get('status')!r} is not succeeded or failed")
        values: dict[str, Any] = {"status": body["status"], "error": str(body.get("error", ""))}
        for field, key in cls._KEYS.items():
            kind = float if field.endswith("_s") else int
            try:
                values[field] = kind(body.get(key, 0))
            except (TypeError, ValueError):
                raise ValueError(f"task report field {key}={body.get(key)!r} is not a number") from None
        return cls(**values)
