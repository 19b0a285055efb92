"""The trace readers (SWIM, SLS, Rumen), the bytes-to-tasks rule and scaling a trace down."""

from __future__ import annotations

import hashlib
import pickle
import statistics
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from mrsched.simulator.traces import (
    TraceError,
    TraceJob,
    assign_users,
    read_rumen,
    read_sls,
    read_swim,
    read_swim_gaps,
    read_trace,
    scale_down,
    task_counts,
)
from mrsched.simulator.traces.common import hash_user_index, size_band_edges

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
# The SWIM samples are kept in the repository (bench/data/traces/swim/, copied unchanged from SWIM).
SWIM_DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "traces" / "swim"
FB_2009 = SWIM_DATA / "FB-2009_samples_24_times_1hr_0.tsv"
FB_2010 = SWIM_DATA / "FB-2010_samples_24_times_1hr_0.tsv"
MIB = 1 << 20


def _job(
    id: str,
    submit_s: float,
    input_bytes: int = 0,
    shuffle_bytes: int = 0,
    *,
    maps: int | None = None,
    reduces: int | None = None,
    map_durations_s: tuple[float, ...] = (),
) -> TraceJob:
    return TraceJob(
        id,
        submit_s,
        input_bytes,
        shuffle_bytes,
        0,
        maps=maps,
        reduces=reduces,
        map_durations_s=map_durations_s,
    )


# --- SWIM ---------------------------------------------------------------------------------------------------


def test_swim_sample_parses_every_column() -> None:
    jobs = read_swim(FIXTURES / "sample.swim.tsv")
    assert [j.id for j in jobs] == ["job0", "job1", "job2", "job3", "job4"]
    assert [j.submit_s for j in jobs] == [49.0, 101.0, 101.0, 197.0, 208.0]
    assert [(j.input_bytes, j.shuffle_bytes, j.output_bytes) for j in jobs] == [
        (134217728, 268435456, 1048576),
        (134217729, 0, 4096),
        (1099511627776, 2147483649, 5000000),
        (0, 42, 37),
        (3623279, 0, 9838062),
    ]
    assert all(j.maps is None and j.reduces is None for j in jobs)
    assert all(j.map_durations_s == () and j.reduce_durations_s == () for j in jobs)
    assert {(j.user, j.queue) for j in jobs} == {("default", "default")}
    assert read_swim_gaps(FIXTURES / "sample.swim.tsv") == [49.0, 52.0, 0.0, 96.0, 11.0]


def test_swim_sample_task_counts_follow_the_rule() -> None:
    counts = [task_counts(j) for j in read_swim(FIXTURES / "sample.swim.tsv")]
    # 128 MiB -> 1 map; 128 MiB + 1 B -> 2 maps; 1 TiB -> 8192 maps; no input -> still 1 map.
    # 256 MiB shuffled -> 1 reduce; 2 GiB + 1 B -> 3 reduces; no shuffle -> map-only.
    assert counts == [(1, 1), (2, 0), (8192, 3), (1, 1), (1, 0)]


def test_swim_data_is_in_the_repository() -> None:
    assert FB_2009.is_file() and FB_2010.is_file(), f"SWIM traces expected in {SWIM_DATA}"


@pytest.mark.parametrize(("path", "count"), [(FB_2009, 5894), (FB_2010, 24442)])
def test_swim_reads_both_facebook_days(path: Path, count: int) -> None:
    jobs = read_swim(path)
    assert len(jobs) == count
    assert len({j.id for j in jobs}) == count
    assert jobs[0].id == "job0" and jobs[-1].id == f"job{count - 1}"
    submits = [j.submit_s for j in jobs]
    assert all(a <= b for a, b in pairwise(submits))
    assert 86_000 < submits[-1] < 86_500  # 24 one-hour samples: one day
    # The gap column is the difference of consecutive submit times (the first from 0).
    gaps = read_swim_gaps(path)
    assert gaps == [b - a for a, b in pairwise([0.0, *submits])]


def test_swim_2009_gap_statistics_match_the_spec() -> None:
    gaps = read_swim_gaps(FB_2009)
    assert statistics.mean(gaps) == pytest.approx(14.7, abs=0.05)
    assert statistics.median(gaps) == 7


def test_swim_2009_first_job_is_read_exactly() -> None:
    first = read_swim(FB_2009)[0]
    assert first == TraceJob("job0", 49.0, 740773, 2339561, 627471)


def test_swim_malformed_lines_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("job0\t1\t1\t10\t0\t5\n\njob1\t2\t1\t10\t0\n")
    with pytest.raises(TraceError, match=r"bad\.tsv: line 3: expected 6 tab-separated columns, found 5"):
        read_swim(bad)
    bad.write_text("job0\t1\t1\t10\t0\t5\njob1\t2\t1\t1e3\t0\t5\n")
    with pytest.raises(TraceError, match=r"bad\.tsv: line 2: input bytes must be a whole number"):
        read_swim(bad)
    bad.write_text("job0\tsoon\t1\t10\t0\t5\n")
    with pytest.raises(TraceError, match=r"line 1: submit time must be a number of seconds"):
        read_swim(bad)
    bad.write_text("job0\t1\t-1\t10\t0\t5\n")
    with pytest.raises(TraceError, match=r"line 1: gap cannot be negative"):
        read_swim_gaps(bad)


# --- SLS ----------------------------------------------------------------------------------------------------


def test_sls_sample_counts_tasks_and_keeps_durations() -> None:
    jobs = read_sls(FIXTURES / "sample-sls.json")
    assert [(j.id, j.submit_s) for j in jobs] == [("job_1", 0.0), ("2", 42.0), ("3", 42.0), ("job_2", 96.4)]
    first, copy_a, copy_b, second = jobs
    assert (first.maps, first.reduces) == (2, 1)
    assert first.map_durations_s == (22.5, 19.75) and first.reduce_durations_s == (52.5,)
    assert (first.user, first.queue) == ("default", "sls_queue_1")
    # "count": 3 gives three containers; durations from container.duration.ms, duration.ms, end - start.
    assert (second.maps, second.reduces) == (3, 2)
    assert second.map_durations_s == (12.5, 12.5, 12.5) and second.reduce_durations_s == (40.0, 29.75)
    assert (second.user, second.queue) == ("alice", "sls_queue_2")
    # "job.count": 2 gives two jobs with SLS's generated ids; container.type defaults to map.
    copy = TraceJob(
        "2",
        42.0,
        0,
        0,
        0,
        maps=1,
        reduces=0,
        queue="sls_queue_1",
        map_durations_s=(18.75,),
        map_hosts=("node3",),
    )
    assert (copy_a, copy_b) == (copy, replace(copy, id="3"))
    assert second.map_hosts == ("node4",) * 3 and second.reduce_hosts == ("node1", "node2")


def test_sls_carries_no_bytes() -> None:
    jobs = read_sls(FIXTURES / "sample-sls.json")
    assert {(j.input_bytes, j.shuffle_bytes, j.output_bytes) for j in jobs} == {(0, 0, 0)}
    assert task_counts(jobs[-1]) == (3, 2)  # the trace's own counts, not the bytes rule


def test_sls_malformed_input_names_the_record(tmp_path: Path) -> None:
    bad = tmp_path / "bad-sls.json"
    bad.write_text(
        '{"job.start.ms": 0, "job.tasks": [{"duration.ms": 5}]}\n{"job.tasks": [{"duration.ms": 5}]}\n'
    )
    with pytest.raises(TraceError, match=r"bad-sls\.json: record 2 \(line 2\): missing field 'job.start.ms'"):
        read_sls(bad)
    bad.write_text(
        '{"job.start.ms": 0,\n "job.tasks": [{"duration.ms": 5},\n'
        ' {"container.start.ms": 9, "container.end.ms": 9}]}\n'
    )
    with pytest.raises(
        TraceError, match=r"record 1 \(line 1\), job.tasks\[1\]: task duration must be positive"
    ):
        read_sls(bad)
    bad.write_text('{"job.start.ms": 0, "job.tasks": []}')
    with pytest.raises(TraceError, match=r"record 1 \(line 1\): a job needs at least one task"):
        read_sls(bad)
    bad.write_text('{"job.start.ms": "soon", "job.tasks": [{"duration.ms": 5}]}')
    with pytest.raises(TraceError, match=r"field 'job.start.ms' must be an integer, not 'soon'"):
        read_sls(bad)
    bad.write_text('{"am.type": "stream", "job.start.ms": 0, "job.tasks": [{"duration.ms": 5}]}')
    with pytest.raises(TraceError, match=r"only mapreduce jobs"):
        read_sls(bad)
    bad.write_text('{"job.start.ms": 0, "job.tasks": [{"duration.ms": 5, "container.type": "shuffle"}]}')
    with pytest.raises(TraceError, match=r"container.type must be 'map' or 'reduce'"):
        read_sls(bad)


def test_sls_numbers_may_be_strings_as_jackson_reads_them(tmp_path: Path) -> None:
    trace = tmp_path / "strings.json"
    trace.write_text(
        '{"job.start.ms": "1500", "job.id": "j", "job.tasks": [{"duration.ms": "2500", "count": "2"}]}'
    )
    assert read_sls(trace) == [TraceJob("j", 1.5, 0, 0, 0, maps=2, reduces=0, map_durations_s=(2.5, 2.5))]


def test_sls_keeps_each_containers_host_for_yarn_mode(tmp_path: Path) -> None:
    trace = tmp_path / "hosts.json"
    trace.write_text(
        '{"job.start.ms": 0, "job.tasks": [{"container.host": "/rack1/node3", "duration.ms": 5, "count": 2},'
        ' {"duration.ms": 5}, {"container.host": "/rack2/node7", "duration.ms": 9, "container.type": "reduce"}]}'
    )
    (job,) = read_sls(trace)
    assert job.map_hosts == ("node3", "node3", "")  # as SLSUtils.getRackHostName splits "/rack/host"
    assert job.reduce_hosts == ("node7",)


# --- Rumen --------------------------------------------------------------------------------------------------


def test_rumen_sample_sums_bytes_and_keeps_durations() -> None:
    terasort_gen, wordcount = read_rumen(FIXTURES / "sample-rumen.json")
    # Second in the file, but submitted a minute earlier: it is the origin of the trace.
    assert terasort_gen == TraceJob(
        id="job_1369942127770_1209",
        submit_s=0.0,
        input_bytes=82,  # the second map's inputBytes is -1: unknown, left out
        shuffle_bytes=0,  # map-only
        output_bytes=833333300,  # what its maps wrote to HDFS
        maps=2,
        reduces=0,
        user="alice",
        queue="default",  # "queue": null
        map_durations_s=(17.5, 18.25),
        reduce_durations_s=(),
    )
    assert wordcount == TraceJob(
        id="job_1369942127770_1210",
        submit_s=60.0,
        input_bytes=134217728 + 100663296,
        shuffle_bytes=92274688,
        output_bytes=12582912,
        maps=2,
        reduces=1,
        user="jenkins",
        queue="sls_queue_1",
        map_durations_s=(15.0, 16.5),  # the last (successful) attempt of a task that failed once
        reduce_durations_s=(39.0,),
    )


def test_rumen_without_reduce_counters_takes_the_map_output(tmp_path: Path) -> None:
    trace = tmp_path / "rumen.json"
    trace.write_text(
        '{"jobID": "job_1", "submitTime": 1000, "totalMaps": -1, "totalReduces": -1,'
        ' "mapTasks": [{"inputBytes": 10, "outputBytes": 7, "startTime": 1000, "finishTime": 3000,'
        '               "attempts": []},'
        '              {"inputBytes": 20, "outputBytes": 5}],'
        ' "reduceTasks": [{"inputBytes": -1, "outputBytes": 3}]}'
    )
    (job,) = read_rumen(trace)
    assert (job.maps, job.reduces) == (2, 1)  # from the task lists, as the totals are unknown
    assert (job.input_bytes, job.shuffle_bytes, job.output_bytes) == (30, 12, 3)
    assert job.map_durations_s == (2.0,) and job.reduce_durations_s == ()  # times unknown: left out


def test_rumen_malformed_input_names_the_record(tmp_path: Path) -> None:
    bad = tmp_path / "bad-rumen.json"
    bad.write_text('{"jobID": "a", "submitTime": 5}\n{"jobID": "b"}\n')
    with pytest.raises(TraceError, match=r"bad-rumen\.json: record 2 \(line 2\): missing field 'submitTime'"):
        read_rumen(bad)
    bad.write_text('{"jobID": "a", "submitTime": -1}')
    with pytest.raises(TraceError, match=r"record 1 \(line 1\): submitTime is unknown"):
        read_rumen(bad)
    bad.write_text(
        '{"jobID": "a", "submitTime": 5, "mapTasks": [{"startTime": 1,\n'
        ' "attempts": [{"startTime": 9, "finishTime": 4}]}]}'
    )
    with pytest.raises(TraceError, match=r"mapTasks\[0\], attempts\[0\]: finishTime 4 is before startTime 9"):
        read_rumen(bad)


# --- concatenated JSON --------------------------------------------------------------------------------------


def test_garbage_between_objects_gives_line_and_byte_offset(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.json"
    # "é" is two bytes in UTF-8: the "o" of "oops" is character 34 of the file but byte 35.
    bad.write_text(
        '{"jobID": "é", "submitTime": 5}\n  oops {"jobID": "b", "submitTime": 6}\n', encoding="utf-8"
    )
    with pytest.raises(
        TraceError, match=r"garbage\.json: record 2, line 2 column 3 \(byte offset 35\): not JSON"
    ):
        read_rumen(bad)


def test_truncated_object_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "truncated.json"
    bad.write_text('{"jobID": "a", "submitTime": 5}{"jobID": "b", ')
    with pytest.raises(TraceError, match=r"record 2, line 1 column \d+ \(byte offset \d+\): not JSON"):
        read_rumen(bad)


def test_a_top_level_array_is_not_the_format(tmp_path: Path) -> None:
    bad = tmp_path / "array.json"
    bad.write_text('[{"jobID": "a", "submitTime": 5}]')
    with pytest.raises(TraceError, match=r"record 1 \(line 1\), byte offset 0: expected a JSON object"):
        read_rumen(bad)


def test_objects_may_follow_each_other_without_whitespace(tmp_path: Path) -> None:
    trace = tmp_path / "tight.json"
    trace.write_text('{"jobID": "a", "submitTime": 5000}{"jobID": "b", "submitTime": 2000}')
    assert [(j.id, j.submit_s) for j in read_rumen(trace)] == [("b", 0.0), ("a", 3.0)]
    assert read_rumen(tmp_path / "tight.json")[0].maps == 0
    empty = tmp_path / "empty.json"
    empty.write_text(" \n")
    assert read_rumen(empty) == [] and read_sls(empty) == []


def test_trace_errors_survive_pickling() -> None:
    error = TraceError("x.json", "record 1 (line 1)", "missing field 'jobID'")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) == "x.json: record 1 (line 1): missing field 'jobID'"
    assert isinstance(copy, ValueError)


# --- read_trace ---------------------------------------------------------------------------------------------


def test_read_trace_dispatches_on_the_format() -> None:
    assert read_trace("swim", FIXTURES / "sample.swim.tsv") == read_swim(FIXTURES / "sample.swim.tsv")
    assert read_trace("sls", FIXTURES / "sample-sls.json") == read_sls(FIXTURES / "sample-sls.json")
    assert read_trace("rumen", str(FIXTURES / "sample-rumen.json")) == read_rumen(
        FIXTURES / "sample-rumen.json"
    )
    with pytest.raises(
        ValueError, match=r"unknown trace format 'gridmix': valid formats are 'swim', 'sls', 'rumen'"
    ):
        read_trace("gridmix", FIXTURES / "sample.swim.tsv")


# --- task_counts --------------------------------------------------------------------------------------------


def test_task_counts_rule_from_bytes() -> None:
    assert task_counts(_job("a", 0, 0, 0)) == (1, 0)
    assert task_counts(_job("a", 0, 1, 1)) == (1, 1)
    assert task_counts(_job("a", 0, 128 * MIB, 1024 * MIB)) == (1, 1)
    assert task_counts(_job("a", 0, 128 * MIB + 1, 1024 * MIB + 1)) == (2, 2)
    assert task_counts(_job("a", 0, 1000 * MIB, 5000 * MIB)) == (8, 5)


def test_task_counts_rule_is_configurable() -> None:
    job = _job("a", 0, 1000 * MIB, 5000 * MIB)
    assert task_counts(job, block_mb=64) == (16, 5)
    assert task_counts(job, reduce_mb=256) == (8, 20)
    assert task_counts(job, block_mb=0.5, reduce_mb=2048) == (2000, 3)
    with pytest.raises(ValueError, match="must be positive"):
        task_counts(job, block_mb=0)


def test_task_counts_use_the_trace_counts_when_given() -> None:
    assert task_counts(_job("a", 0, 1000 * MIB, 5000 * MIB, maps=3, reduces=0)) == (3, 0)
    assert task_counts(_job("a", 0, 1000 * MIB, 5000 * MIB, maps=None, reduces=7)) == (8, 7)
    assert task_counts(_job("a", 0, 0, 0, maps=0, reduces=2)) == (1, 2)  # a job runs at least one map


def test_trace_jobs_reject_negative_sizes() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        _job("a", 0, -1)
    with pytest.raises(ValueError, match="cannot be negative"):
        _job("a", 0, maps=-1)


# --- scale_down ---------------------------------------------------------------------------------------------


def test_scale_down_divides_times_and_shifts_to_zero() -> None:
    jobs = scale_down(read_swim(FIXTURES / "sample.swim.tsv"), time_scale=2.0)
    assert [j.submit_s for j in jobs] == [0.0, 26.0, 26.0, 74.0, 79.5]
    assert [j.input_bytes for j in jobs] == [j.input_bytes for j in read_swim(FIXTURES / "sample.swim.tsv")]


def test_scale_down_divides_sizes_and_keeps_small_jobs_non_empty() -> None:
    jobs = scale_down(read_swim(FIXTURES / "sample.swim.tsv"), size_scale=1000.0)
    assert [j.submit_s for j in jobs] == [0.0, 52.0, 52.0, 148.0, 159.0]
    assert [(j.input_bytes, j.shuffle_bytes, j.output_bytes) for j in jobs] == [
        (134218, 268435, 1049),
        (134218, 0, 4),
        (1099511628, 2147484, 5000),
        (0, 1, 1),  # 42 and 37 bytes stay non-zero; zero stays zero
        (3623, 0, 9838),
    ]


def test_scale_down_keeps_the_first_jobs_in_submission_order() -> None:
    jobs = [_job("late", 500.0), _job("tie-1", 100.0), _job("early", 40.0), _job("tie-2", 100.0)]
    kept = scale_down(jobs, max_jobs=3, time_scale=10.0)
    assert [(j.id, j.submit_s) for j in kept] == [("early", 0.0), ("tie-1", 6.0), ("tie-2", 6.0)]
    assert scale_down(jobs, max_jobs=0) == []
    assert scale_down([]) == []
    assert [j.id for j in scale_down(jobs)] == ["early", "tie-1", "tie-2", "late"]


def test_scale_down_keeps_counts_and_durations() -> None:
    (job,) = scale_down(
        [_job("a", 7.0, 10_000, 0, maps=4, reduces=1, map_durations_s=(3.0,))], time_scale=2, size_scale=10
    )
    assert job == _job("a", 0.0, 1000, 0, maps=4, reduces=1, map_durations_s=(3.0,))


def test_scale_down_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        scale_down([], time_scale=0)
    with pytest.raises(ValueError, match="must be positive"):
        scale_down([], size_scale=-1)
    with pytest.raises(ValueError, match="cannot be negative"):
        scale_down([], max_jobs=-1)


def test_scale_down_keeps_the_size_distribution_of_a_real_day() -> None:
    original = read_swim(FB_2009)
    scaled = scale_down(original, time_scale=24.0, size_scale=1000.0)
    assert len(scaled) == len(original)
    assert scaled[-1].submit_s == pytest.approx((original[-1].submit_s - original[0].submit_s) / 24.0)
    by_id = {j.id: j for j in scaled}
    # Every job shrinks by the same factor (up to rounding), so the ratios between jobs and the ranking hold.
    for job in original:
        small = by_id[job.id].input_bytes
        assert (small == 0) == (job.input_bytes == 0)
        assert abs(small - job.input_bytes / 1000.0) <= 1.0
    ranked = sorted(original, key=lambda j: j.input_bytes)
    assert [by_id[j.id].input_bytes for j in ranked] == sorted(j.input_bytes for j in scaled)
    big = [j for j in original if j.input_bytes >= 10**9]
    assert big  # the heavy tail is there, and keeps its place relative to the median job
    ratio = statistics.median(j.input_bytes for j in big) / statistics.median(j.input_bytes for j in original)
    scaled_big = [by_id[j.id].input_bytes for j in big]
    scaled_ratio = statistics.median(scaled_big) / statistics.median(j.input_bytes for j in scaled)
    assert scaled_ratio == pytest.approx(ratio, rel=0.01)


# --- users --------------------------------------------------------------------------------------------------


def test_no_user_rule_leaves_every_job_with_the_default_user() -> None:
    assert {j.user for j in read_swim(FB_2009)} == {"default"}


def test_hash_rule_is_blake2b_of_the_job_id() -> None:
    # blake2b("job0", digest_size=8) read big-endian, mod 8.
    digest = int.from_bytes(hashlib.blake2b(b"job0", digest_size=8).digest(), "big")
    assert hash_user_index("job0", 8) == digest % 8 == 6  # pinned: the rule must not drift between versions
    assert [hash_user_index(f"job{i}", 8) for i in (1, 2)] == [1, 4]
    (job,) = assign_users([_job("job0", 0.0)], "hash", 8)
    assert job.user == f"user-{digest % 8}"


def test_hash_rule_is_stable_and_ignores_size_and_order() -> None:
    jobs = [_job(f"job{i}", float(i), input_bytes=i * 1000) for i in range(50)]
    first = assign_users(jobs, "hash", 5)
    again = assign_users(list(reversed(jobs)), "hash", 5)
    resized = assign_users([_job(j.id, 0.0, input_bytes=7) for j in jobs], "hash", 5)
    assert [j.user for j in first] == [j.user for j in reversed(again)] == [j.user for j in resized]
    assert [j.id for j in first] == [j.id for j in jobs]  # order kept, nothing else changed
    assert [(j.submit_s, j.input_bytes) for j in first] == [(j.submit_s, j.input_bytes) for j in jobs]


def test_hash_rule_spreads_a_real_day_over_every_user() -> None:
    jobs = assign_users(read_swim(FB_2009), "hash", 8)
    counts = {u: sum(1 for j in jobs if j.user == u) for u in {j.user for j in jobs}}
    assert set(counts) == {f"user-{k}" for k in range(8)}
    # 5,894 jobs over 8 users: 737 each on average; a fair hash stays within a few standard deviations.
    assert all(600 <= n <= 880 for n in counts.values()), counts


def test_size_rule_bands_follow_the_quantiles() -> None:
    jobs = [
        _job(f"j{i}", 0.0, input_bytes=b) for i, b in enumerate([0, 10, 10, 500, 10**6, 10**9, 10**12, 5])
    ]
    # Sorted sizes 0, 5, 10, 10, 500, 1e6, 1e9, 1e12; quartile edges at ranks 2, 4, 6: 10, 500, 1e9.
    assert size_band_edges((j.input_bytes for j in jobs), 4) == [10, 500, 10**9]
    users = {j.id: j.user for j in assign_users(jobs, "size", 4)}
    assert users == {
        "j0": "user-0", "j7": "user-0",  # 0 and 5 B: below the first edge
        "j1": "user-1", "j2": "user-1",  # 10 B: equal sizes share a band (an edge opens its band)
        "j3": "user-2", "j4": "user-2",  # 500 B, 1 MB
        "j5": "user-3", "j6": "user-3",  # 1 GB, 1 TB
    }  # fmt: skip


def test_size_rule_puts_small_and_large_jobs_of_a_real_day_in_different_users() -> None:
    jobs = assign_users(read_swim(FB_2009), "size", 8)
    band = {j.id: int(j.user.removeprefix("user-")) for j in jobs}
    by_size = sorted(jobs, key=lambda j: j.input_bytes)
    # Larger input never means a smaller band, and the extremes are far apart.
    assert [band[j.id] for j in by_size] == sorted(band[j.id] for j in by_size)
    assert band[by_size[0].id] == 0 and band[by_size[-1].id] == 7
    # Octiles: every user holds about an eighth of the day (ties at an edge shift a few jobs).
    counts = [sum(1 for b in band.values() if b == k) for k in range(8)]
    assert all(abs(n - len(jobs) / 8) < 0.05 * len(jobs) for n in counts), counts
    # The largest user's smallest job is bigger than every job of the other users.
    assert min(j.input_bytes for j in jobs if band[j.id] == 7) > max(
        j.input_bytes for j in jobs if band[j.id] < 7
    )


def test_user_rules_survive_scaling_and_cutting() -> None:
    jobs = assign_users(read_swim(FB_2009), "size", 8)
    scaled = scale_down(jobs, size_scale=6.0, max_jobs=100)
    by_id = {j.id: j.user for j in jobs}
    assert all(j.user == by_id[j.id] for j in scaled)


def test_user_rules_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        assign_users([], "hash", 0)
    with pytest.raises(ValueError, match="unknown user rule 'queue'"):
        assign_users([], "queue", 3)  # type: ignore[arg-type]
    assert assign_users([], "size", 3) == []
    assert [j.user for j in assign_users([_job("a", 0.0, 9)], "size", 3)] == ["user-2"]
