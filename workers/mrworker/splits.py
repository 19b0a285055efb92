"""Input splits: byte ranges of input files, read as whole lines the way Hadoop's LineRecordReader reads them.

A split owns every line that *starts* inside its range ``[start, start + length)``: a reader whose range starts
mid-line skips to the next line, and a reader whose range ends mid-line finishes that line. Adjacent splits
therefore read each line exactly once, wherever the boundaries fall.

Map ``i`` of ``M``, when the operator gives no explicit split, reads bytes ``[i*T/M, (i+1)*T/M)`` of the input
files concatenated in name order (``T`` their total size); its split may span several files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mrworker.errors import TaskError, UsageError
from mrworker.report import Counters

BLOCK_BYTES = 4 << 20


@dataclass(frozen=True)
class Split:
    path: Path
    start: int
    length: int

    @classmethod
    def parse(cls, text: str, data_dir: Path) -> Split:
        """``PATH[:START:LENGTH]``, PATH relative to the data directory; without a range, the whole file."""
        path_text, *range_text = text.rsplit(":", 2) if text.count(":") >= 2 else [text]
        path = resolve(path_text, data_dir)
        if not range_text:
            return cls(path, 0, _size(path))
        try:
            start, length = (int(v) for v in range_text)
        except ValueError:
            raise UsageError(
                f"split {text!r}: START and LENGTH must be integers (PATH:START:LENGTH)"
            ) from None
        if start < 0 or length < 0:
            raise UsageError(f"split {text!r}: START and LENGTH must not be negative")
        return cls(path, start, length)


def resolve(path_text: str, data_dir: Path) -> Path:
    path = Path(path_text)
    return path if path.is_absolute() else data_dir / path


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        raise TaskError(f"input {path} does not exist") from None


def input_files(inputs: list[Path]) -> list[Path]:
    """Every input file, directories expanded recursively, in name order; hidden and ``_`` names skipped."""
    files: list[Path] = []
    for entry in inputs:
        if entry.is_dir():
            for root, dirs, names in os.walk(entry):
                dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
                files.extend(Path(root) / n for n in sorted(names) if not n.startswith(("_", ".")))
        elif entry.exists():
            files.append(entry)
        else:
            raise TaskError(f"input {entry} does not exist")
    if not files:
        raise TaskError(f"no input files under {', '.join(map(str, inputs))}")
    return files


def nth_split(files: list[Path], index: int, count: int) -> list[Split]:
    """Map ``index`` of ``count``: its equal share of the concatenated input, as ranges of single files."""
    sizes = [_size(f) for f in files]
    total = sum(sizes)
    lo, hi = index * total // count, (index + 1) * total // count
    splits: list[Split] = []
    offset = 0
    for path, size in zip(files, sizes, strict=True):
        start, end = max(lo, offset), min(hi, offset + size)
        if start < end:
            splits.append(Split(path, start - offset, end - start))
        offset += size
    return splits


def read_blocks(split: Split, counters: Counters, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The split's lines in blocks of whole lines (each block ends with a newline, except at end of file)."""
    end = split.start + split.length
    try:
        f = open(split.path, "rb")  # noqa: SIM115 - closed below; the generator may be abandoned mid-way
    except OSError as err:
        raise TaskError(f"cannot read input {split.path}: {err.strerror}") from None
    with f:
        pos = split.start
        if pos > 0:
            f.seek(pos - 1)
            skipped = f.readline()  # the rest of the line that started in the previous split
            pos += len(skipped) - 1
            counters.read_bytes += len(skipped)
        while pos < end:
            block = f.read(min(block_bytes, end - pos))
            if not block:
                return
            if pos + len(block) >= end or block.rfind(b"\n") < 0:
                if not block.endswith(b"\n"):
                    block += f.readline()  # the last line starts inside the split: it is ours
            else:
                block = block[: block.rfind(b"\n") + 1]
                f.seek(pos + len(block))
            pos += len(block)
            counters.read_bytes += len(block)
            yield block


def split_lines(block: bytes) -> list[bytes]:
    """A block's lines without their newline (a final line without one counts too)."""
    lines = block.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines
