"""Pi by quasi-Monte Carlo (Hadoop's ``examples/QuasiMonteCarlo``, formerly PiEstimator).

Map ``i`` takes ``--samples`` consecutive points of the two-dimensional Halton sequence (bases 2 and 3),
starting at index ``1 + i * samples`` so that maps never overlap, and counts those inside the circle inscribed
in the unit square. The single reducer sums the counts; π ≈ 4 · inside / total. A Halton sequence fills the
square evenly (discrepancy O((log N)² / N)), so the error shrinks much faster than pseudo-random sampling's
O(1/√N).

Output of the reduce: ``pi``, ``inside``, ``outside`` and ``samples`` lines, ``name<TAB>value``.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

from mrworker.errors import UsageError
from mrworker.segments import count_key, grouped_counts, merge
from mrworker.task import Sink, Task


class Halton:
    """Halton points from index ``start`` on, each radical inverse advanced digit by digit like an odometer."""

    _DIGITS = 64

    def __init__(self, start: int, bases: tuple[int, ...] = (2, 3)) -> None:
        self.bases = bases
        self.digits: list[list[int]] = []
        self.weights: list[list[float]] = []
        self.values: list[float] = []
        for base in bases:
            digits, n = [], start
            while n:
                n, d = divmod(n, base)
                digits.append(d)
            digits += [0] * (self._DIGITS - len(digits))
            weights = [float(base) ** -(k + 1) for k in range(self._DIGITS)]
            self.digits.append(digits)
            self.weights.append(weights)
            self.values.append(sum(d * w for d, w in zip(digits, weights, strict=True)))

    def next(self) -> tuple[float, ...]:
        """The current point; then step to the next index."""
        point = tuple(self.values)
        for i, base in enumerate(self.bases):
            digits, weights = self.digits[i], self.weights[i]
            k = 0
            while digits[k] == base - 1:
                digits[k] = 0
                self.values[i] -= (base - 1) * weights[k]
                k += 1
            digits[k] += 1
            self.values[i] += weights[k]
        return point


def count_inside(start: int, samples: int) -> int:
    halton = Halton(start)
    inside = 0
    for _ in range(samples):
        x, y = halton.next()
        inside += (x - 0.5) ** 2 + (y - 0.5) ** 2 <= 0.25
    return inside


class Pi:
    map_only = False
    reads_input = False

    def map(self, task: Task) -> None:
        if task.samples <= 0:
            raise UsageError("pi needs --samples N (points per map), N > 0")
        if task.reduces != 1:
            raise UsageError(f"pi sums every map in one reducer: --reduces must be 1, not {task.reduces}")
        inside = count_inside(1 + task.index * task.samples, task.samples)
        task.counters.records_in = task.samples
        out = task.count_collector(reduces=1, combiner=True)
        out.add_count(b"inside", inside)
        out.add_count(b"outside", task.samples - inside)
        task.commit_map_output(out.finish)

    def reduce(self, task: Task) -> None:
        segments = task.shuffle_segments(count_key)
        counts = dict(
            grouped_counts(merge(segments, task.counters, memory_bytes=task.sort_buffer_bytes, key=count_key))
        )
        inside, outside = counts.get(b"inside", 0), counts.get(b"outside", 0)
        total = inside + outside

        def write(out: Sink) -> None:
            with localcontext() as ctx:
                ctx.prec = 20
                estimate = Decimal(4 * inside) / Decimal(total) if total else Decimal("NaN")
            out.write(f"pi\t{estimate}\ninside\t{inside}\noutside\t{outside}\nsamples\t{total}\n".encode())
            task.counters.records_out = 4

        task.commit_part(write)
