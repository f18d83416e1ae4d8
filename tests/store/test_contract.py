"""The JudgementStore contract, run against every backend (conftest.py): round trips, paging and cursors,
duplicates, idempotency keys and their races, concurrency, and the lifecycle."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from judge_service.errors import InvalidGroupError
from judge_service.quality.divergence import GroupDivergence
from judge_service.schemas import (
    MAX_ANSWERS,
    MAX_STEP,
    MAX_TEXT_CHARS,
    Answer,
    AuditedAnswer,
    AuditRecord,
    ChatMessage,
    Criterion,
    ExplainedReasons,
    HumanLabels,
    JudgeResponse,
    Rubric,
    RubricRequest,
    RuleOptions,
    Usage,
)
from judge_service.store.base import (
    Claim,
    IdempotencyKey,
    IdempotencyKeyTaken,
    JudgementStore,
    MemberJoin,
)
from judge_service.store.retention import PrunedBatch
from tests.store.conftest import StoreUnderTest
from tests.store.samples import T0, make_judgement


async def test_round_trip(store: JudgementStore, backend: StoreUnderTest) -> None:
    judgement = make_judgement()
    await store.save(judgement)
    loaded = await store.get(judgement.judgement_id)
    assert loaded == judgement
    assert loaded is not None and loaded.request.answers[2].text == "¯\\_(ツ)_/¯ — ünïcode"
    assert await backend.count() == 1


async def test_a_store_answers_its_ping(store: JudgementStore) -> None:
    await store.ping()  # readiness with JUDGE_READY_REQUIRES_STORE asks this


async def test_get_unknown_is_none(store: JudgementStore) -> None:
    assert await store.get("no-such-id") is None


async def test_duplicate_id_is_refused_and_original_kept(
    store: JudgementStore, backend: StoreUnderTest
) -> None:
    original = make_judgement("dup")
    await store.save(original)
    with pytest.raises(ValueError, match="already stored"):
        await store.save(make_judgement("dup", run_id="run-other", n=9))
    assert await store.get("dup") == original
    assert await backend.count() == 1


async def test_list_run_pages_oldest_first(store: JudgementStore) -> None:
    saved = []
    for i in range(6):
        j = make_judgement(f"a-{i}", run_id="run-a", step=i % 2, n=i)
        await store.save(j)
        saved.append(j)
        await store.save(make_judgement(f"b-{i}", run_id="run-b", step=i % 2, n=i))
    await store.save(make_judgement("none-0", run_id=None, step=None))

    pages = []
    cursor: str | None = None
    while True:
        page = await store.list_run("run-a", limit=2, cursor=cursor)
        pages.append(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p.items) for p in pages] == [2, 2, 2]
    assert pages[0].next_cursor is not None and pages[1].next_cursor is not None
    ids = [item.judgement_id for p in pages for item in p.items]
    assert ids == [f"a-{i}" for i in range(6)]
    # Items are the response without what produced it.
    first = pages[0].items[0]
    assert type(first) is JudgeResponse
    assert first == JudgeResponse.model_validate(saved[0].model_dump(exclude={"request", "raw_outputs"}))


async def test_list_run_step_filter_and_exact_last_page(store: JudgementStore) -> None:
    for i in range(5):
        await store.save(make_judgement(f"a-{i}", run_id="run-a", step=i % 2, n=i))
    await store.save(make_judgement("b-0", run_id="run-b", step=0))

    page = await store.list_run("run-a", step=0, limit=3)
    assert [i.judgement_id for i in page.items] == ["a-0", "a-2", "a-4"]
    assert page.next_cursor is None  # exactly `limit` rows left is still the last page

    page = await store.list_run("run-a", step=1, limit=1)
    assert [i.judgement_id for i in page.items] == ["a-1"]
    page = await store.list_run("run-a", step=1, limit=1, cursor=page.next_cursor)
    assert [i.judgement_id for i in page.items] == ["a-3"]
    assert page.next_cursor is None


async def test_list_run_unknown_run_is_empty(store: JudgementStore) -> None:
    await store.save(make_judgement())
    page = await store.list_run("run-zzz")
    assert page.items == [] and page.next_cursor is None


async def test_cursor_sees_rows_written_after_it_was_issued(store: JudgementStore) -> None:
    for i in range(3):
        await store.save(make_judgement(f"a-{i}", n=i))
    page = await store.list_run("run-a", limit=2)
    await store.save(make_judgement("a-3", n=3))
    page = await store.list_run("run-a", limit=2, cursor=page.next_cursor)
    assert [i.judgement_id for i in page.items] == ["a-2", "a-3"]


@pytest.mark.parametrize("cursor", ["", "!!!", "not a cursor", "MA", "LTE", "MDE", "eA", "Mw==", "x" * 200])
async def test_bad_cursor_is_invalid_group(store: JudgementStore, cursor: str) -> None:
    with pytest.raises(InvalidGroupError, match="pass next_cursor from the previous page"):
        await store.list_run("run-a", cursor=cursor)


async def test_limit_below_one_is_refused(store: JudgementStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.list_run("run-a", limit=0)


async def test_idempotency_key_round_trip_and_taken(store: JudgementStore, backend: StoreUnderTest) -> None:
    first = make_judgement("first")
    await store.save(first, idempotency=IdempotencyKey("key-1", "hash-1"))
    found = await store.get_by_idempotency_key("key-1")
    assert found is not None and (found.judgement, found.request_hash) == (first, "hash-1")
    assert await store.get_by_idempotency_key("key-2") is None
    with pytest.raises(IdempotencyKeyTaken):
        await store.save(make_judgement("second"), idempotency=IdempotencyKey("key-1", "hash-2"))
    assert await store.get("second") is None  # the loser's judgement is not stored
    # Saves without a key never collide with each other.
    await store.save(make_judgement("no-key-1"))
    await store.save(make_judgement("no-key-2"))
    assert await backend.count() == 3


async def test_concurrent_saves_under_one_key_store_exactly_one(store: JudgementStore) -> None:
    saves = [make_judgement(f"race-{i}", n=i) for i in range(8)]
    results = await asyncio.gather(
        *(store.save(j, idempotency=IdempotencyKey("raced", f"h{i}")) for i, j in enumerate(saves)),
        return_exceptions=True,
    )
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1
    assert all(isinstance(r, IdempotencyKeyTaken) for r in results if r is not None)
    found = await store.get_by_idempotency_key("raced")
    assert found is not None and found.judgement == saves[winners[0]]


async def test_concurrent_saves_all_land(store: JudgementStore, backend: StoreUnderTest) -> None:
    judgements = [make_judgement(f"c-{i:02d}", n=i) for i in range(50)]
    await asyncio.gather(*(store.save(j) for j in judgements))
    assert await backend.count() == 50
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_run("run-a", limit=7, cursor=cursor)
        ids += [i.judgement_id for i in page.items]
        if (cursor := page.next_cursor) is None:
            break
    assert sorted(ids) == [j.judgement_id for j in judgements]
    assert len(set(ids)) == 50


async def test_a_conflict_fails_only_its_own_save(store: JudgementStore, backend: StoreUnderTest) -> None:
    await store.save(make_judgement("taken"))
    saves = [make_judgement("ok-1"), make_judgement("taken", n=5), make_judgement("ok-2")]
    saves += [make_judgement("twice", n=1), make_judgement("twice", n=2)]
    results = await asyncio.gather(*(store.save(j) for j in saves), return_exceptions=True)
    failed = [type(r).__name__ if r is not None else None for r in results]
    assert failed == [None, "ValueError", None, None, "ValueError"]
    assert "already stored" in str(results[1])
    assert await backend.count() == 4
    assert await store.get("taken") == make_judgement("taken")  # the original, not n=5
    assert await store.get("twice") == make_judgement("twice", n=1)


async def test_reopen_keeps_data(store: JudgementStore, backend: StoreUnderTest) -> None:
    await store.save(make_judgement("kept"), idempotency=IdempotencyKey("kept-key", "h"))
    await store.close()
    second = backend.reopen()
    await second.open()
    await second.open()  # idempotent
    try:
        assert await second.get("kept") == make_judgement("kept")
        assert await second.get_by_idempotency_key("kept-key") is not None
    finally:
        await second.close()


async def test_close_writes_the_saves_it_accepted(store: JudgementStore, backend: StoreUnderTest) -> None:
    saves = [asyncio.create_task(store.save(make_judgement(f"late-{i}", n=i))) for i in range(20)]
    await asyncio.sleep(0)  # the saves are queued, not yet written
    await store.close()
    await asyncio.gather(*saves)  # every one acknowledged...
    assert await backend.count() == 20  # ...and stored


async def test_methods_after_close_raise(store: JudgementStore) -> None:
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await store.save(make_judgement())
    with pytest.raises(RuntimeError, match="closed"):
        await store.get("x")
    with pytest.raises(RuntimeError, match="closed"):
        await store.list_run("run-a")
    with pytest.raises(RuntimeError, match="closed"):
        await store.get_by_idempotency_key("x")
    with pytest.raises(RuntimeError, match="closed"):
        await store.open()


async def test_claim_is_held_by_one_owner_until_released(store: JudgementStore) -> None:
    key = IdempotencyKey("claimed", "hash-a")
    assert await store.claim(key, owner="replica-1", lease_s=60) == Claim(owned=True, request_hash="hash-a")
    # Another owner finds it held, and for which request.
    held = await store.claim(IdempotencyKey("claimed", "hash-b"), owner="replica-2", lease_s=60)
    assert held == Claim(owned=False, request_hash="hash-a")
    assert await store.claim(key, owner="replica-1", lease_s=60) == Claim(owned=True, request_hash="hash-a")
    await store.release("claimed", owner="replica-2")  # not the holder: nothing happens
    assert not (await store.claim(key, owner="replica-2", lease_s=60)).owned
    await store.release("claimed", owner="replica-1")
    assert (await store.claim(key, owner="replica-2", lease_s=60)).owned


async def test_a_lapsed_lease_is_taken_over_and_renew_says_who_holds_it(store: JudgementStore) -> None:
    key = IdempotencyKey("lapsing", "h")
    assert (await store.claim(key, owner="crashed", lease_s=0.2)).owned
    assert not (await store.claim(key, owner="survivor", lease_s=60)).owned
    assert await store.renew("lapsing", owner="crashed", lease_s=0.2)  # still its own
    await asyncio.sleep(0.35)  # lapsed: the holder stopped renewing
    assert (await store.claim(key, owner="survivor", lease_s=60)).owned
    assert not await store.renew("lapsing", owner="crashed", lease_s=60)  # it knows it lost the key
    assert await store.renew("lapsing", owner="survivor", lease_s=60)


async def test_saving_under_a_key_ends_its_claim(store: JudgementStore) -> None:
    key = IdempotencyKey("settled", "h")
    assert (await store.claim(key, owner="replica-1", lease_s=60)).owned
    await store.save(make_judgement("settled-1"), idempotency=key)
    # The claim went with the commit: another owner may claim (and will find the judgement first).
    assert (await store.claim(key, owner="replica-2", lease_s=60)).owned
    assert not await store.renew("settled", owner="replica-1", lease_s=60)


async def test_a_save_that_lost_its_key_leaves_the_winners_claim_alone(store: JudgementStore) -> None:
    await store.save(make_judgement("first"), idempotency=IdempotencyKey("k", "h"))
    assert (await store.claim(IdempotencyKey("k", "h"), owner="late", lease_s=60)).owned
    with pytest.raises(IdempotencyKeyTaken):
        await store.save(make_judgement("second"), idempotency=IdempotencyKey("k", "h"))
    assert await store.renew("k", owner="late", lease_s=60)


def join(
    answer_id: str, text: str = "t", *, key: str = "g", fields: str = '{"f":1}', size: int = 3
) -> MemberJoin:
    return MemberJoin(key, fields, size, min_members=2, deadline_s=60, answer_id=answer_id, text=text)


async def test_members_join_until_the_group_is_full_then_it_closes(store: JudgementStore) -> None:
    first = await store.join_group(join("a"))
    assert (first.members, first.closed, first.size, first.min_members) == ({"a": "t"}, False, 3, 2)
    assert 59 < first.seconds_left <= 60
    assert (await store.join_group(join("b", "u"))).members == {"a": "t", "b": "u"}
    full = await store.join_group(join("c"))
    assert full.closed and set(full.members) == {"a", "b", "c"}
    late = await store.join_group(join("d"))
    assert late.closed and "d" not in late.members  # a late member joins nothing
    assert replace(await store.member_group("g"), seconds_left=0) == replace(late, seconds_left=0)
    assert await store.member_group("unknown") is None


async def test_a_member_that_differs_or_repeats_changes_nothing(store: JudgementStore) -> None:
    await store.join_group(join("a", "first text"))
    other_fields = await store.join_group(join("b", fields='{"f":2}'))
    assert other_fields.fields == '{"f":1}' and other_fields.members == {"a": "first text"}
    again = await store.join_group(join("a", "second text"))
    assert again.members == {"a": "first text"}  # the caller compares the text it sent


async def test_concurrent_joins_close_the_group_once_with_exactly_its_size(store: JudgementStore) -> None:
    groups = await asyncio.gather(*(store.join_group(join(f"m{i}", size=4)) for i in range(10)))
    closing = [g for g in groups if g.closed and len(g.members) == 4]
    final = await store.member_group("g")
    assert final is not None and final.closed and len(final.members) == 4
    assert all(len(g.members) <= 4 for g in groups) and closing


async def test_closing_at_the_deadline_freezes_the_members_and_old_groups_are_pruned(
    store: JudgementStore,
) -> None:
    await store.join_group(join("a"))
    closed = await store.close_group("g")
    assert closed is not None and closed.closed and closed.members == {"a": "t"}
    assert not (await store.join_group(join("b"))).members.get("b")
    assert await store.close_group("unknown") is None
    await store.join_group(join("x", key="still-open"))
    assert await store.prune_groups(closed_for_s=3600) == 0
    await asyncio.sleep(0.05)
    assert await store.prune_groups(closed_for_s=0.01) == 1
    assert await store.member_group("g") is None
    assert await store.member_group("still-open") is not None


async def test_the_largest_values_a_request_may_carry_round_trip(store: JudgementStore) -> None:
    """What the request bounds admit (schemas.py), every store holds unchanged: the largest step, the
    longest texts, astral-plane characters, and option values the text fields never see."""
    judgement = make_judgement("extreme", step=MAX_STEP)
    request = judgement.request.model_copy(
        update={
            "reference": "🧪" * MAX_TEXT_CHARS,
            "group_key": "\t\r\n" + "é" * 253,
            "options": RuleOptions(
                json_schema={"\u0000key": ["\u0000", 10**30, -0.0, None]}, labels=["\U0001f600"]
            ),
        }
    )
    judgement = judgement.model_copy(update={"request": request, "group_key": request.group_key})
    await store.save(judgement, idempotency=IdempotencyKey("~" * 255, "h"))
    assert await store.get("extreme") == judgement
    page = await store.list_run("run-a", step=MAX_STEP)
    assert [i.judgement_id for i in page.items] == ["extreme"]


MOST, LEAST_NORMAL, LEAST = sys.float_info.max, sys.float_info.min, 5e-324
EXTREME_NUMBERS = {
    "most": MOST,
    "-most": -MOST,
    "least": LEAST,
    "-least": -LEAST,
    "least normal": LEAST_NORMAL,
    "negative zero": -0.0,
    "past int64": 10**30,
    "-past int64": -(10**30),
    "int64": 2**63 - 1,
}


async def test_extreme_numbers_and_texts_in_a_callers_judgement_round_trip(store: JudgementStore) -> None:
    """What a caller may put into a judgement, at the edges of what the request bounds admit, reads back
    exactly: doubles at both ends of their range (sign of zero included), integers past 64 bits, the
    longest texts and names, astral-plane and other unusual characters."""
    judgement = make_judgement("extremes", step=MAX_STEP)
    long_text = ("\U0010ffff\u0085\u2028ẞ\t" * MAX_TEXT_CHARS)[:MAX_TEXT_CHARS]
    criteria = [
        Criterion(
            name="c" * 32,
            description="🧪" * 500,
            mark_1="\t\r\n" + "é" * 297,
            mark_5="\U0001f600" * 300,
            weight=100,
        ),
        Criterion(name="tiny", description="d", mark_1="1", mark_5="5", weight=LEAST),
    ]
    request = judgement.request.model_copy(
        update={
            "answers": [Answer(id=f"{i:064d}", text=long_text) for i in range(8)],
            "criteria": criteria,
            "item": {**EXTREME_NUMBERS, "nested": [[[EXTREME_NUMBERS]]], "text": "🧪" * 4000, "": None},
            "seed": 2**32 - 1,
            "group_key": "\U0001f600" * 256,
        }
    )
    judgement = judgement.model_copy(update={"request": request, "group_key": request.group_key})
    await store.save(judgement)
    loaded = await store.get("extremes")
    assert loaded == judgement
    assert loaded is not None and repr(loaded.request.item) == repr(request.item)  # -0.0 stays -0.0


async def test_labels_at_the_edges_of_what_a_label_request_admits_round_trip(store: JudgementStore) -> None:
    judgement = make_judgement("labelled-extremes")
    await store.save(judgement)
    jid = judgement.judgement_id
    labels = [
        HumanLabels(
            judgement_id=jid,
            labeler="ranker",
            human={f"{i:064d}": i + 1 for i in range(MAX_ANSWERS)},
            kind="rank",
        ),
        HumanLabels(
            judgement_id=jid,
            labeler="tiny.one@x: y-z_",
            human={"a0": LEAST, "a1": LEAST_NORMAL},
            scale=(0, 1),
        ),
        HumanLabels(
            judgement_id=jid,
            labeler="w" * 64,
            human={"a0": MOST, "a1": -MOST, "a2": -0.0},
            scale=(-MOST, MOST),
        ),
    ]
    for label in labels:
        await store.save_labels(label, run_id="run-a")
    expected = sorted(labels, key=lambda label: label.labeler or "")
    assert await store.labels_of(jid) == expected
    assert await store.run_labels("run-a") == expected
    assert [repr(label.human) for label in await store.labels_of(jid)] == [
        repr(label.human) for label in expected
    ]
    # What JSON cannot hold cannot be built, so it is never stored (the 422 of PUT .../labels).
    for bad in ({"human": {"a0": 1}, "scale": (0, float("inf"))}, {"human": {"a0": float("nan")}}):
        with pytest.raises(ValueError, match="finite"):
            HumanLabels(judgement_id=jid, labeler="x", **bad)


async def test_labels_an_older_release_stored_unreadable_are_left_out_not_a_failure(
    store: JudgementStore,
) -> None:
    """A release that accepted an infinite scale stored it as null; reading such labels must not fail
    every route that lists the judgement's or the run's labels."""
    judgement = make_judgement("labelled-before-the-fix")
    await store.save(judgement)
    jid = judgement.judgement_id
    broken = HumanLabels.model_construct(
        judgement_id=jid,
        group_key=None,
        labeler="old",
        human={"a0": 1.0},
        kind="score",
        scale=(0, float("inf")),
    )
    good = HumanLabels(judgement_id=jid, labeler="new", human={"a0": 0.5})
    await store.save_labels(broken, run_id="run-old")
    await store.save_labels(good, run_id="run-old")
    assert await store.labels_of(jid) == [good]
    assert await store.run_labels("run-old") == [good]


async def test_a_rubric_at_the_edges_of_what_an_edit_admits_round_trips(store: JudgementStore) -> None:
    items = [
        Criterion(
            name=f"item_{i}", description="🧪" * 500, scale="binary", kind="pitfall" if i else "essential"
        )
        for i in range(20)
    ]
    rubric = _rubric(1, "x").model_copy(
        update={
            "criteria": items,
            "note": "\u2028ü" * 250,
            "request": RubricRequest(
                conversation=[ChatMessage(role="user", content="🧪" * MAX_TEXT_CHARS)],
                reference="é" * MAX_TEXT_CHARS,
            ),
        }
    )
    assert await store.save_rubric(rubric) == rubric
    assert await store.rubric(rubric.id, 1) == rubric


def _reasons(word: str) -> ExplainedReasons:
    return ExplainedReasons(
        answers={"a0": {"correctness": f"{word}: matches the reference"}},
        failures={"a1": "the judge wrote no reasons for this answer"},
        judge_model="judge-model",
        prompt_version="judge_group@abc+def",
        usage=Usage(prompt_tokens=10, completion_tokens=5, judge_calls=1),
        created_at=datetime.now(UTC),
    )


async def test_reasons_written_afterwards_are_kept_apart_and_the_first_stay(store: JudgementStore) -> None:
    judgement = make_judgement("explained")
    await store.save(judgement)
    assert await store.explained_of("explained") is None
    first = _reasons("first")
    assert await store.save_explained("explained", first) == first
    # A second writer (another replica that asked the judge at the same time) gets the first back.
    assert await store.save_explained("explained", _reasons("second")) == first
    assert await store.explained_of("explained") == first
    assert await store.get("explained") == judgement  # the judgement itself is never rewritten
    racing = await asyncio.gather(*(store.save_explained("explained-2", _reasons(f"r{i}")) for i in range(5)))
    assert len({r.answers["a0"]["correctness"] for r in racing}) == 1
    assert await store.explained_of("explained-2") == racing[0]


def _rubric(version: int, description: str) -> Rubric:
    item = Criterion(name="item_1", description=description, scale="binary", kind="essential")
    return Rubric(
        id="rb_" + "0" * 24,
        version=version,
        sha256=description,
        criteria=[item],
        source="generated" if version == 1 else "edited",
        request=RubricRequest(conversation=[ChatMessage(role="user", content="q")], reference="r", items=3),
        judge_model="m" if version == 1 else None,
        prompt_version="judge_group@x",
        created_at=datetime.now(UTC),
    )


async def test_rubric_versions_are_kept_and_the_first_writer_of_a_version_wins(store: JudgementStore) -> None:
    rubric_id = "rb_" + "0" * 24
    assert await store.rubric(rubric_id) is None
    first = _rubric(1, "Gives 42")
    racing = await asyncio.gather(*(store.save_rubric(_rubric(1, f"Gives {i}")) for i in range(4)))
    assert all(r == racing[0] for r in racing)  # one version 1, whoever wrote it
    assert await store.save_rubric(first) == racing[0]
    edited = await store.save_rubric(_rubric(2, "Gives 43"))
    assert edited.version == 2
    assert await store.rubric(rubric_id) == edited  # the latest
    assert await store.rubric(rubric_id, 1) == racing[0]  # an earlier version stays
    assert await store.rubric(rubric_id, 3) is None


# ------------------------------------------------------------------ retention (store/retention.py)


async def _aged(store: JudgementStore, count: int, *, start: int = 0, run_id: str = "run-a") -> list[str]:
    """`count` judgements created a day apart from T0 + `start` days; their ids, oldest first."""
    ids = []
    for i in range(start, start + count):
        judgement = make_judgement(f"aged-{run_id}-{i:03d}", run_id=run_id).model_copy(
            update={"created_at": T0 + timedelta(days=i)}
        )
        await store.save(judgement, idempotency=IdempotencyKey(f"key-{run_id}-{i}", "hash"))
        ids.append(judgement.judgement_id)
    return ids


async def test_pruning_deletes_the_oldest_first_in_batches_with_their_keys_and_reasons(
    store: JudgementStore, backend: StoreUnderTest
) -> None:
    ids = await _aged(store, 7)
    await store.save_explained(ids[0], _reasons("old"))
    await store.save_explained(ids[6], _reasons("new"))
    before = T0 + timedelta(days=5)  # the first five are older
    first = await store.prune_judgements(before, limit=3)
    assert first == PrunedBatch(judgements=3, explained_reasons=1, labels=0)
    assert [await store.get(i) is None for i in ids] == [True, True, True, False, False, False, False]
    second = await store.prune_judgements(before, limit=3)
    assert second.judgements == 2
    assert await store.prune_judgements(before, limit=3) == PrunedBatch()
    assert await backend.count() == 2
    assert await store.explained_of(ids[0]) is None and await store.explained_of(ids[6]) is not None
    assert first.audits == 0
    # The key went with its judgement: the same key stores a new judgement.
    assert await store.get_by_idempotency_key("key-run-a-0") is None
    await store.save(make_judgement("again"), idempotency=IdempotencyKey("key-run-a-0", "hash"))
    assert await store.get(ids[5]) is not None and await store.get(ids[6]) is not None


async def test_pruning_keeps_labelled_judgements_unless_asked_and_can_keep_to_one_run(
    store: JudgementStore,
) -> None:
    run_a = await _aged(store, 3, run_id="run-a")
    run_b = await _aged(store, 3, run_id="run-b")
    labels = HumanLabels(judgement_id=run_a[0], labeler="ann", human={"a0": 5.0})
    await store.save_labels(labels, run_id="run-a")
    before = T0 + timedelta(days=10)
    only_b = await store.prune_judgements(before, run_id="run-b", limit=100)
    assert only_b.judgements == 3 and all([await store.get(i) is not None for i in run_a])
    kept = await store.prune_judgements(before, limit=100)
    assert kept.judgements == 2 and await store.get(run_a[0]) is not None
    assert await store.labels_of(run_a[0]) == [labels]
    labelled = await store.prune_judgements(before, include_labelled=True, limit=100)
    assert labelled == PrunedBatch(judgements=1, explained_reasons=0, labels=1)
    assert await store.get(run_a[0]) is None and await store.labels_of(run_a[0]) == []
    assert run_b  # pruned above


async def test_a_regrade_outlives_its_pruned_original(store: JudgementStore) -> None:
    (original,) = await _aged(store, 1)
    regrade = make_judgement("regrade-1").model_copy(
        update={"created_at": T0 + timedelta(days=30), "regrade_of": original}
    )
    await store.save(regrade)
    assert (await store.prune_judgements(T0 + timedelta(days=10))).judgements == 1
    kept = await store.get("regrade-1")
    assert kept is not None and kept.regrade_of == original and await store.get(original) is None
    assert await store.regrades_of([original]) == [kept]


async def test_lapsed_claims_are_pruned_and_live_ones_kept(store: JudgementStore) -> None:
    await store.claim(IdempotencyKey("lapsed", "h"), owner="dead", lease_s=-3600)
    await store.claim(IdempotencyKey("live", "h"), owner="alive", lease_s=60)
    assert await store.prune_claims(datetime.now(UTC) - timedelta(minutes=1)) == 1
    assert await store.prune_claims(datetime.now(UTC) - timedelta(minutes=1)) == 0
    assert not (await store.claim(IdempotencyKey("live", "h"), owner="other", lease_s=60)).owned


async def test_one_prune_at_a_time(store: JudgementStore, backend: StoreUnderTest) -> None:
    other = backend.reopen()
    await other.open()
    try:
        async with store.prune_lock() as held:
            assert held
            async with other.prune_lock() as second:
                assert not second
        async with other.prune_lock() as after:
            assert after  # released
    finally:
        await other.close()


def _audit(judgement_id: str, step: int, gap: float, run_id: str = "run-a") -> AuditRecord:
    return AuditRecord(
        judgement_id=judgement_id,
        run_id=run_id,
        step=step,
        created_at=T0 + timedelta(seconds=step),
        judge="audit",
        model="auditor",
        prompt_version="judge_group@1",
        answers=[
            AuditedAnswer(id="a0", training=0.9, audit=0.9 - gap),
            AuditedAnswer(id="a1", training=None, audit=0.5),
        ],
        rank_correlation=None,
        gap=gap,
        criterion_gaps={"correctness": gap},
        best_differs=None,
    )


async def test_audits_are_kept_per_judgement_read_per_run_in_step_order_and_pruned_with_it(
    store: JudgementStore,
) -> None:
    ids = await _aged(store, 3)
    for i, step in zip(ids, (7, 2, 5), strict=True):
        await store.save_audit(_audit(i, step, gap=step / 10))
    await store.save_audit(_audit("elsewhere", 1, 0.0, run_id="run-b"))
    # A second record for one judgement (another replica drew it too): the first stays.
    await store.save_audit(_audit(ids[1], 2, gap=0.99))
    assert await store.audit_of(ids[1]) == _audit(ids[1], 2, gap=0.2)
    assert await store.audit_of("never-audited") is None
    figures = await store.run_divergence("run-a")
    assert [f.step for f in figures] == [2, 5, 7]
    assert figures[0] == GroupDivergence(
        step=2,
        answers=1,
        rank_correlation=None,
        gap=0.2,
        criterion_gaps={"correctness": 0.2},
        best_differs=None,
    )
    assert await store.run_divergence("run-a", limit=2) == figures[:2]
    assert await store.run_divergence("no-such-run") == []
    pruned = await store.prune_judgements(T0 + timedelta(days=1), limit=10)  # the first of the three
    assert pruned == PrunedBatch(judgements=1, audits=1)
    assert await store.audit_of(ids[0]) is None
    assert [f.step for f in await store.run_divergence("run-a")] == [2, 5]


async def test_an_audits_figures_read_back_as_written(store: JudgementStore) -> None:
    await store.save(make_judgement("flagged"))
    record = _audit("flagged", 4, 0.125).model_copy(update={"rank_correlation": -0.5, "best_differs": True})
    await store.save_audit(record)
    (figures,) = await store.run_divergence("run-a")
    assert (figures.rank_correlation, figures.best_differs) == (-0.5, True)
    assert type(figures.best_differs) is bool


async def test_an_audit_of_a_judgement_pruned_meanwhile_is_not_kept(store: JudgementStore) -> None:
    """Its audit waited in the backlog while retention deleted it: a row no prune would find again."""
    await store.save_audit(_audit("pruned-meanwhile", 1, 0.0))
    assert await store.audit_of("pruned-meanwhile") is None
    assert await store.run_divergence("run-a") == []
