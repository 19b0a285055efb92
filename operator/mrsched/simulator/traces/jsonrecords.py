"""Files of concatenated JSON objects, and typed access to their fields with errors that say where.

Hadoop's SLS and Rumen traces are not one JSON document but a sequence of objects, one per job, written one
after another (Jackson's ``ObjectMapper.readValues`` reads them back). :func:`read_records` decodes them with
``json.JSONDecoder.raw_decode`` in a loop, skipping the whitespace between objects; anything else between or
inside them is a :class:`TraceError` naming the record, its line and the byte offset.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mrsched.simulator.traces.common import TraceError

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _byte_offset(text: str, pos: int) -> int:
    return len(text[:pos].encode("utf-8"))


@dataclass(frozen=True)
class Fields:
    """One JSON object of a trace, with the file and the place in it (``where``) for error messages."""

    data: dict[str, Any]
    path: str
    where: str

    def error(self, message: str) -> TraceError:
        return TraceError(self.path, self.where, message)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(self, key: str, default: int | None = None) -> int:
        """An integer field; JSON numbers with no fraction and decimal strings count (Jackson reads both).
        Missing or ``null`` gives ``default``, or an error when there is none."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise self.error(f"missing field {key!r}")
            return default
        if isinstance(value, bool):
            raise self.error(f"field {key!r} must be an integer, not {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise self.error(f"field {key!r} must be an integer, not {value!r}")

    def text(self, key: str, default: str | None = None) -> str:
        """A string field (numbers are turned into their text). Missing or ``null`` gives ``default``, or an
        error when there is none."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise self.error(f"missing field {key!r}")
            return default
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise self.error(f"field {key!r} must be a string, not {value!r}")

    def objects(self, key: str) -> list[Fields]:
        """A list of objects; missing or ``null`` is an empty list."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(f"field {key!r} must be a list of objects")
        items = []
        for i, item in enumerate(value):
            where = f"{self.where}, {key}[{i}]"
            if not isinstance(item, dict):
                raise TraceError(self.path, where, "expected a JSON object")
            items.append(Fields(item, self.path, where))
        return items


def read_records(path: str | os.PathLike[str]) -> Iterator[Fields]:
    """The top-level JSON objects of ``path``, in file order, each located as ``record N (line L)``."""
    name = os.fspath(path)
    text = Path(path).read_text(encoding="utf-8-sig")
    decoder = json.JSONDecoder()
    pos = _skip_whitespace(text, 0)
    line, counted_to, number = 1, 0, 0
    while pos < len(text):
        number += 1
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            where = (
                f"record {number}, line {e.lineno} column {e.colno} (byte offset {_byte_offset(text, e.pos)})"
            )
            raise TraceError(name, where, f"not JSON: {e.msg}") from None
        where = f"record {number} (line {line})"
        if not isinstance(value, dict):
            raise TraceError(
                name, f"{where}, byte offset {_byte_offset(text, pos)}", "expected a JSON object, one per job"
            )
        yield Fields(value, name, where)
        pos = _skip_whitespace(text, end)
