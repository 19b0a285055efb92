"""Each built-in application, run as real worker processes, against an independent computation."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from tests.workers.data import input_bytes, input_lines, parts, read_counts, text_corpus
from tests.workers.image import Worker


@pytest.mark.parametrize("combiner", [True, False], ids=["combiner", "no-combiner"])
def test_wordcount_equals_counter(worker: Worker, combiner: bool) -> None:
    corpus = text_corpus(worker.data / "text")
    args = ["--input", "text", "--sort-buffer-mb", "1", *([] if combiner else ["--no-combiner"])]
    results = worker.job("wordcount", maps=4, reduces=3, output="counts", args=args)

    assert read_counts(worker.data / "counts") == Counter(input_bytes(corpus).split())
    assert (worker.data / "counts" / "_SUCCESS").exists()
    assert not (worker.data / "counts" / "_temporary").exists(), "commit-job leaves no temporary data"
    maps = [r.report for r in results[:4]]
    assert sum(m["recordsIn"] for m in maps) == len(input_lines(corpus)), "every line read by exactly one map"
    # A 1 MiB buffer cannot hold ~20,000 distinct words: the maps spilled and merged (re-reading the spills).
    assert sum(m["readBytes"] for m in maps) > len(input_bytes(corpus))


def test_grep_equals_re(worker: Worker) -> None:
    corpus = text_corpus(worker.data / "text", vocabulary=300)
    pattern = r"[a-f]+(é|ß)?[a-z]"
    worker.job("grep", maps=3, reduces=2, output="matches", args=["--input", "text", "--pattern", pattern])

    regex = re.compile(pattern.encode())
    expected = Counter(m.group(0) for line in input_lines(corpus) for m in regex.finditer(line))
    assert expected, "the pattern matches something"
    assert read_counts(worker.data / "matches") == expected


def test_sort_equals_sorted(worker: Worker) -> None:
    worker.job("randomwriter", maps=1, reduces=0, output="random", args=["--bytes-per-map", "3000000"])
    corpus = text_corpus(
        worker.data / "random", files=1, seed=7
    )  # beside randomwriter's part: lines of all sorts
    assert (corpus / "part-m-00000").stat().st_size >= 3000000
    worker.job(
        "sort", maps=3, reduces=2, output="sorted", args=["--input", "random", "--sort-buffer-mb", "1"]
    )

    outputs = [p.read_bytes().split(b"\n")[:-1] for p in parts(worker.data / "sorted")]
    for lines in outputs:
        assert lines == sorted(lines), "each reducer's part is sorted"
    assert sorted(line for lines in outputs for line in lines) == sorted(input_lines(corpus))


def test_terasort_parts_concatenate_in_total_order(worker: Worker) -> None:
    worker.job("teragen", maps=2, reduces=0, output="tera-in", args=["--rows", "30000"])
    results = worker.job(
        "terasort", maps=3, reduces=4, output="tera-out", args=["--input", "tera-in", "--sort-buffer-mb", "1"]
    )

    records = input_lines(worker.data / "tera-in")
    assert len(records) == 60000 and {len(r) for r in records} == {99}, "teragen writes 100-byte records"
    out = b"".join(p.read_bytes() for p in parts(worker.data / "tera-out")).split(b"\n")[:-1]
    assert out == sorted(records)
    sizes = [r.report["recordsOut"] for r in results[3:7]]
    assert min(sizes) > 0.7 * max(sizes), f"the sampled partitioner balances reducers: {sizes}"


def test_pi_within_quasi_monte_carlo_error(worker: Worker) -> None:
    maps, samples = 4, 25000
    worker.job("pi", maps=maps, reduces=1, output="pi", args=["--samples", str(samples)])

    values = dict(line.split("\t") for line in (worker.data / "pi" / "part-r-00000").read_text().splitlines())
    n = maps * samples
    assert int(values["samples"]) == n and int(values["inside"]) + int(values["outside"]) == n
    # Halton points have discrepancy O((log N)^2 / N); pseudo-random sampling's error would be about
    # sqrt(pi (4 - pi) / N) = 0.0052 here, four times this bound.
    assert abs(float(values["pi"]) - math.pi) < math.log(n) ** 2 / n


@pytest.mark.parametrize("app", ["randomtextwriter", "randomwriter", "teragen"])
def test_generators_are_deterministic_per_map(worker: Worker, app: str) -> None:
    def generate(output: str, *, seed: int, attempt: int) -> bytes:
        result = worker.run(
            "map",
            "--app",
            app,
            "--maps",
            "2",
            "--index",
            "1",
            "--reduces",
            "0",
            "--seed",
            str(seed),
            "--attempt",
            str(attempt),
            "--bytes-per-map",
            "200000",
            "--rows",
            "2000",
            "--output",
            output,
        )
        # Only map 1 ran, so the job is not committed: the part waits in the job's committed-task area.
        data = (worker.data / output / "_temporary" / "manual" / "part-m-00001").read_bytes()
        assert result.report["writtenBytes"] == len(data)
        return data

    data = generate("a", seed=5, attempt=0)
    assert len(data) == 200000 if app == "teragen" else len(data) >= 200000
    assert generate("b", seed=5, attempt=3) == data, "a retried attempt writes the same bytes"
    assert generate("c", seed=6, attempt=0) != data, "the seed changes the data"


def test_jio_writes_its_input_transformed_output_factor_times(worker: Worker) -> None:
    corpus = text_corpus(worker.data / "text", files=2)
    results = worker.job(
        "jio", maps=3, reduces=0, output="etl", args=["--input", "text", "--output-factor", "4"]
    )

    lines = input_lines(corpus)
    written = [line for p in parts(worker.data / "etl", "m") for line in p.read_bytes().split(b"\n")[:-1]]
    expected = Counter(line.rstrip().upper() for line in lines)
    assert Counter(written) == Counter({line: 4 * n for line, n in expected.items()})
    maps = [r.report for r in results[:3]]
    assert sum(m["recordsIn"] for m in maps) == len(lines)
    # I/O-bound by construction: it writes four times what it reads.
    assert sum(m["writtenBytes"] for m in maps) >= 3.9 * len(input_bytes(corpus))
