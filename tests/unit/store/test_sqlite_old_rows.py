"""Judgements stored before the quality fields existed still load, with those fields null."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from judge_service.store.sqlite import SqliteJudgementStore
from tests.store.samples import make_judgement

NEW_FIELDS = ("order_seed", "answer_orders", "order_sensitivity", "grader_fingerprint", "regrade_of")
NEW_REQUEST_FIELDS = ("seed", "orders")


async def test_a_row_without_the_new_fields_loads(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    store = SqliteJudgementStore(path)
    await store.open()
    try:
        await store.save(make_judgement("old-0001", run_id="old-run"))
        with closing(sqlite3.connect(path)) as conn:  # rewrite the doc as an older build wrote it
            doc = json.loads(conn.execute("SELECT doc FROM judgements").fetchone()[0])
            for key in NEW_FIELDS:
                doc.pop(key)
            for key in NEW_REQUEST_FIELDS:
                doc["request"].pop(key)
            conn.execute("UPDATE judgements SET doc = ?", (json.dumps(doc),))
            conn.commit()
        loaded = await store.get("old-0001")
        assert loaded is not None
        assert all(getattr(loaded, key) is None for key in NEW_FIELDS)
        assert (loaded.request.seed, loaded.request.orders) == (None, 1)
        page = await store.list_run("old-run")
        assert page.items[0].grader_fingerprint is None and page.items[0].regrade_of is None
    finally:
        await store.close()
