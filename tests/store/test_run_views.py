"""The run views (store/run_views.py) on every store backend: runs with their totals, a run's figures per
step with filters and paging, and the figures of judgements stored before the summary columns existed."""

from __future__ import annotations

import math
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from judge_service.schemas import AnswerResult, CanaryResult, StoredJudgement
from judge_service.store import codec
from judge_service.store.base import JudgementStore
from judge_service.store.migrations import MIGRATIONS, POSTGRES, SQLITE
from judge_service.store.postgres import PostgresJudgementStore
from judge_service.store.sqlite import SqliteJudgementStore
from tests.store.samples import make_judgement


def judged(
    judgement_id: str, run_id: str, step: int, scores: list[float | None], n: int, **extra: object
) -> StoredJudgement:
    """A sample judgement with the given answer scores (None: unscored)."""
    base = make_judgement(judgement_id, run_id=run_id, step=step, n=n)
    answers = [
        AnswerResult(id=f"x{i}", status="unscored", score=None, error="no marks")
        if score is None
        else AnswerResult(id=f"x{i}", status="scored", score=score)
        for i, score in enumerate(scores)
    ]
    return base.model_copy(update={"answers": answers, **extra})


async def fill(store: JudgementStore) -> list[StoredJudgement]:
    judgements = [
        judged("r1-s0-a", "run-1", 0, [0.5, 0.5, 0.5], 0, grader_fingerprint="f1", order_sensitivity=0.25),
        judged("r1-s0-b", "run-1", 0, [1.0, 0.0, None], 1, grader_fingerprint="f1"),
        judged("r1-s1-a", "run-1", 1, [0.25, 0.75], 2, grader_fingerprint="f2"),
        judged("r2-s5-a", "run-2", 5, [None, None], 3, grader_fingerprint="f1"),
        judged("r0-s9-a", "run-0", 9, [1.0], 4, grader_fingerprint=None),
        judged("no-run", None, 1, [0.1], 5),  # type: ignore[arg-type]
    ]
    for j in judgements:
        await store.save(j)
    return judgements


async def test_runs_are_listed_with_their_totals_in_pages(store: JudgementStore) -> None:
    judgements = await fill(store)
    first = await store.list_runs(limit=2)
    assert [r.run_id for r in first.items] == ["run-0", "run-1"] and first.next_cursor == "run-1"
    rest = await store.list_runs(limit=2, cursor=first.next_cursor)
    assert [r.run_id for r in rest.items] == ["run-2"] and rest.next_cursor is None
    run1 = first.items[1]
    assert (run1.steps, run1.judgements, run1.last_step) == (2, 3, 1)
    assert run1.last_activity == judgements[2].created_at
    assert run1.last_step_mean_score == pytest.approx(0.5)  # step 1: 0.25 and 0.75
    assert run1.unscored_share == pytest.approx(1 / 8, abs=1e-6)
    assert [(f.fingerprint, f.judgements) for f in run1.fingerprints] == [("f1", 2), ("f2", 1)]
    run2 = rest.items[0]
    assert run2.last_step_mean_score is None and run2.unscored_share == 1.0
    assert [(f.fingerprint, f.judgements) for f in first.items[0].fingerprints] == [(None, 1)]
    assert (await store.list_runs(cursor="run-9")).items == []


async def test_a_runs_figures_per_step(store: JudgementStore) -> None:
    await fill(store)
    steps = await store.run_steps("run-1")
    assert [s.step for s in steps.items] == [0, 1] and steps.next_cursor is None
    step0, step1 = steps.items
    scores0 = [0.5, 0.5, 0.5, 1.0, 0.0]
    mean0 = sum(scores0) / 5
    assert (step0.groups, step0.answers) == (2, 6)
    assert step0.mean_score == pytest.approx(mean0, abs=1e-6)
    assert step0.score_sd == pytest.approx(math.sqrt(sum((s - mean0) ** 2 for s in scores0) / 5), abs=1e-6)
    assert step0.flat_share == 0.5  # the first group: three equal scores
    assert step0.unscored_share == pytest.approx(1 / 6, abs=1e-6)
    assert step0.order_sensitivity == 0.25  # only the group judged under several orders counts
    assert step0.prompt_tokens == 812 and step0.completion_tokens == 240 and step0.judge_ms == 930.25
    assert step1.flat_share == 0.0 and step1.order_sensitivity is None
    assert (await store.run_steps("run-2")).items[0].flat_share is None  # no group with 2+ scored


async def test_steps_filter_by_range_and_fingerprint_and_page(store: JudgementStore) -> None:
    await fill(store)
    only_f2 = await store.run_steps("run-1", fingerprint="f2")
    assert [s.step for s in only_f2.items] == [1]
    first = await store.run_steps("run-1", limit=1)
    assert [s.step for s in first.items] == [0] and first.next_cursor == "0"
    second = await store.run_steps("run-1", after=int(first.next_cursor), limit=1)
    assert [s.step for s in second.items] == [1] and second.next_cursor is None
    assert [s.step for s in (await store.run_steps("run-1", after=-1, until=0)).items] == [0]
    assert (await store.run_steps("no-such-run")).items == []


def canary(kind: str, score: float | None, outranked: bool | None) -> CanaryResult:
    status = "scored" if score is not None else "unscored"
    return CanaryResult(id="c", status=status, score=score, kind=kind, text="", outranked=outranked)  # type: ignore[arg-type]


async def test_a_steps_canary_and_length_bias_figures(store: JudgementStore) -> None:
    for j in [
        judged("w0", "watch", 0, [0.1], 0, canaries=[canary("injection", 0.9, True)], length_bias=0.5),
        judged("w1", "watch", 0, [0.1], 1, canaries=[canary("injection", 0.0, False)], length_bias=1.0),
        judged("w2", "watch", 0, [0.1], 2, canaries=[canary("empty", 0.5, True)], length_bias=None),
        judged("w3", "watch", 0, [0.1], 3, canaries=[canary("opener", None, None)]),  # no outcome
        judged("w4", "watch", 0, [0.1], 4),  # no canary
        judged("w5", "watch", 1, [0.1], 5),
    ]:
        await store.save(j)
    step0, step1 = (await store.run_steps("watch")).items
    assert step0.canary_groups == 3  # the unscored canary has no outcome: not counted
    assert step0.canary_outrank_share == pytest.approx(2 / 3, abs=1e-6)
    assert step0.canary_outrank_by_kind == {"injection": 0.5, "empty": 1.0}
    assert step0.length_bias == 0.75  # the mean over the groups that have one
    assert (step1.canary_groups, step1.canary_outrank_share, step1.canary_outrank_by_kind) == (0, None, {})
    assert step1.length_bias is None


# --- judgements stored before migration m005 get their figures from the migration


OLD_COLUMNS = (
    "judgement_id, created_at, run_id, step, group_key, grader, judge_model, prompt_version, status, doc"
)


def old_row(judgement: StoredJudgement) -> tuple[object, ...]:
    return codec.row(judgement, None)[:10]


def expected_steps(judgements: list[StoredJudgement]) -> list[tuple[int, float | None, float | None]]:
    """(step, mean score, flat share) as the store computes them for new rows (codec.summary)."""
    by_step: dict[int, list[StoredJudgement]] = {}
    for j in judgements:
        by_step.setdefault(j.step or 0, []).append(j)
    result = []
    for step, group in sorted(by_step.items()):
        scores = [a.score for j in group for a in j.answers if a.score is not None]
        flats = [codec.summary(j)[6] for j in group if codec.summary(j)[6] is not None]
        mean = sum(scores) / len(scores) if scores else None
        result.append((step, mean, sum(flats) / len(flats) if flats else None))
    return result


SAMPLES = [
    judged("old-a", "old-run", 0, [0.5, 0.5], 0, grader_fingerprint="f1", order_sensitivity=0.5),
    judged("old-b", "old-run", 0, [1.0, None, 0.25], 1, grader_fingerprint="f1"),
    judged("old-c", "old-run", 1, [None], 2),
]


async def check_backfilled(store: JudgementStore) -> None:
    steps = (await store.run_steps("old-run")).items
    assert [(s.step, s.mean_score, s.flat_share) for s in steps] == [
        (step, pytest.approx(mean) if mean is not None else None, flat)
        for step, mean, flat in expected_steps(SAMPLES)
    ]
    assert steps[0].order_sensitivity == 0.5 and steps[0].prompt_tokens == 812
    assert (steps[0].canary_groups, steps[0].length_bias) == (0, None)  # before the run watch: none
    assert [(f.fingerprint, f.judgements) for f in (await store.list_runs()).items[0].fingerprints] == [
        ("f1", 2),
        (None, 1),
    ]


async def test_sqlite_rows_from_before_the_summaries_are_filled_in(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for migration in MIGRATIONS[:4]:
            conn.executescript(migration.script(SQLITE))
            conn.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (migration.name,))
        conn.execute("PRAGMA user_version = 4")
        conn.executemany(
            f"INSERT INTO judgements ({OLD_COLUMNS}) VALUES ({', '.join('?' * 10)})",
            [old_row(j) for j in SAMPLES],
        )
        conn.commit()
    store = SqliteJudgementStore(path)
    await store.open()
    try:
        await check_backfilled(store)
    finally:
        await store.close()


async def test_postgres_rows_from_before_the_summaries_are_filled_in(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for migration in MIGRATIONS[:4]:
            conn.execute(migration.script(POSTGRES))  # type: ignore[arg-type]
            conn.execute("INSERT INTO schema_migrations VALUES (%s, 'then')", (migration.name,))
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO judgements ({OLD_COLUMNS}) VALUES ({', '.join(['%s'] * 10)})",
                [old_row(j) for j in SAMPLES],
            )
    store = PostgresJudgementStore(postgres_url, migrate_on_open=True)
    await store.open()
    try:
        await check_backfilled(store)
    finally:
        await store.close()


# --- human labels and regrades


async def test_labels_are_kept_per_judgement_and_labeler_and_read_by_run(store: JudgementStore) -> None:
    from judge_service.schemas import HumanLabels

    judgements = await fill(store)
    first, second = judgements[0], judgements[2]

    def label(judgement: StoredJudgement, labeler: str, value: float) -> HumanLabels:
        return HumanLabels(judgement_id=judgement.judgement_id, labeler=labeler, human={"x0": value})

    await store.save_labels(label(second, "ann", 1), run_id="run-1")
    await store.save_labels(label(first, "bob", 2), run_id="run-1")
    await store.save_labels(label(first, "ann", 3), run_id="run-1")
    await store.save_labels(label(first, "ann", 4), run_id="run-1")  # replaces ann's first
    assert [(x.labeler, x.human) for x in await store.labels_of(first.judgement_id)] == [
        ("ann", {"x0": 4.0}),
        ("bob", {"x0": 2.0}),
    ]
    by_run = await store.run_labels("run-1")
    assert [(x.judgement_id, x.labeler) for x in by_run] == [
        (first.judgement_id, "ann"),
        (first.judgement_id, "bob"),
        (second.judgement_id, "ann"),
    ]
    assert await store.run_labels("run-2") == [] and await store.labels_of("nothing") == []


async def test_regrades_of_finds_the_judgements_that_regrade_the_given_ones(store: JudgementStore) -> None:
    judgements = await fill(store)
    regrade = judged("regrade-1", "run-1", 0, [0.5], 9, regrade_of=judgements[0].judgement_id)
    await store.save(regrade)
    found = await store.regrades_of([judgements[0].judgement_id, "no-such-id"])
    assert [j.judgement_id for j in found] == ["regrade-1"]
    assert await store.regrades_of([]) == []
