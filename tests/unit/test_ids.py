"""Ids: fresh UUIDv7s (time-ordered, monotonic) and UUIDv5 names of natural keys."""

from __future__ import annotations

import itertools
import threading
import time
import uuid

from strata.ids import dataset_uuid, job_uuid, new_id, uuid7


def test_version_variant_and_timestamp() -> None:
    before = time.time_ns() // 1_000_000
    u = uuid7()
    after = time.time_ns() // 1_000_000
    assert u.version == 7
    assert u.variant == uuid.RFC_4122
    ms = u.int >> 80
    # A burst may run the counter into the next millisecond, never further.
    assert before <= ms <= after + 1


def test_monotonic_in_a_tight_loop() -> None:
    ids = [uuid7() for _ in range(20_000)]  # many per millisecond: the counter keeps order
    assert len(set(ids)) == len(ids)
    assert all(a < b for a, b in itertools.pairwise(ids))
    strings = [str(u) for u in ids]
    assert strings == sorted(strings)  # the text form sorts like the number


def test_monotonic_across_threads() -> None:
    out: list[list[uuid.UUID]] = [[] for _ in range(4)]

    def work(i: int) -> None:
        out[i].extend(uuid7() for _ in range(2_000))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [u for chunk in out for u in chunk]
    assert len(set(every)) == len(every)
    for chunk in out:
        assert chunk == sorted(chunk)


def test_new_id_is_canonical_text() -> None:
    text = new_id()
    assert len(text) == 36
    assert str(uuid.UUID(text)) == text
    assert uuid.UUID(text).version == 7


def test_names_are_deterministic_and_separate_parts() -> None:
    assert dataset_uuid("ns", "a") == dataset_uuid("ns", "a")
    assert dataset_uuid("ns", "a") != dataset_uuid("ns", "b")
    # Parts are not simply concatenated: ("ab", "c") and ("a", "bc") differ.
    assert dataset_uuid("ab", "c") != dataset_uuid("a", "bc")
    # A job and a dataset of the same name are different things.
    assert dataset_uuid("ns", "a") != job_uuid("ns", "a")
    assert uuid.UUID(dataset_uuid("ns", "a")).version == 5
