"""The event queue owner's contract, on every backend and in SQLite's journal file: an
event is queued once, taken oldest first, and leaves when folded or stays, refused,
with its reason and is not taken again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from strata.store.journal import journal_for
from strata.store.owners import event_queue

AT = datetime(2026, 1, 1, tzinfo=UTC)
H = [f"{n:064d}" for n in range(4)]


@pytest.fixture
def queue(engine: sa.Engine) -> sa.Engine:
    """Where the store keeps its queue: a file of its own on SQLite, the store elsewhere."""
    return journal_for(engine)


def test_events_are_queued_once_and_taken_oldest_first(queue: sa.Engine) -> None:
    with queue.begin() as conn:
        assert event_queue.enqueue(conn, {H[0]: '{"a":1}', H[1]: '{"bb":2}'}, AT) == {H[0], H[1]}
        later = AT + timedelta(seconds=1)
        assert event_queue.enqueue(conn, {H[1]: '{"bb":2}', H[2]: "{}"}, later) == {H[2]}
    with queue.connect() as conn:
        head = event_queue.head(conn, 2)
        assert [(q.payload_hash, q.received_at, q.size) for q in head] == [
            (H[0], AT, 7),
            (H[1], AT, 8),
        ]
        assert dict(event_queue.texts(conn, [H[1], H[3]])) == {H[1]: '{"bb":2}'}
        assert event_queue.waiting(conn, H) == {H[0], H[1], H[2]}


def test_an_event_s_size_is_its_json_in_bytes(queue: sa.Engine) -> None:
    """The fold's budget is memory: a character beyond ASCII counts its UTF-8 bytes."""
    text = '{"n":"é日😀"}'
    with queue.begin() as conn:
        event_queue.enqueue(conn, {H[0]: text}, AT)
    with queue.connect() as conn:
        assert [q.size for q in event_queue.head(conn, 1)] == [len(text.encode())] == [17]


def test_folded_events_leave_and_refused_ones_stay_aside(queue: sa.Engine) -> None:
    with queue.begin() as conn:
        event_queue.enqueue(conn, {h: "{}" for h in H[:3]}, AT)
        event_queue.settle(conn, [H[0]], {H[1]: "no such dataset"})
    with queue.connect() as conn:
        assert [q.payload_hash for q in event_queue.head(conn, 10)] == [H[2]]
        assert event_queue.waiting(conn, H) == {H[2]}
        reasons = conn.execute(
            sa.text("SELECT payload_hash, error FROM lineage_pending ORDER BY seq")
        ).all()
    assert [tuple(r) for r in reasons] == [(H[1], "no such dataset"), (H[2], None)]


def test_a_claimed_event_is_taken_by_no_other_fold_until_settled(queue: sa.Engine) -> None:
    """Folds running at once (replicas' on PostgreSQL) take different events: a claim
    passes over rows another transaction claimed. SQLite folds one at a time (its write
    lock), and there a claim is the plain head."""
    with queue.begin() as conn:
        event_queue.enqueue(conn, {h: "{}" for h in H}, AT)
    postgres = queue.dialect.name == "postgresql"
    with queue.connect() as first, queue.connect() as second:
        first.begin()
        mine = [q.payload_hash for q in event_queue.head(first, 2, claim=True)]
        assert mine == H[:2]
        second.begin()
        theirs = [q.payload_hash for q in event_queue.head(second, 10, claim=True)]
        assert theirs == (H[2:] if postgres else H)
        second.rollback()
        event_queue.settle(first, mine, {})
        first.commit()
        second.begin()
        assert [q.payload_hash for q in event_queue.head(second, 10, claim=True)] == H[2:]
        second.rollback()
