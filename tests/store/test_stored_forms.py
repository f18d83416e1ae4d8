"""Every judgement document that an earlier build stored (the databases in tests/data) loads through the
stored form (store/stored_form/), as a judgement and as a page item, and is written back with everything
it held; the documents of the last build before the stored form are written back as they were (the stored
form writes what the wire form wrote), but for request fields added since, which come back at their
defaults. And no wire field is left out of the stored form unless it is named as not stored."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from judge_service.schemas import (
    JudgeResponse,
    StoredJudgement,
)
from judge_service.store import codec, stored_form
from judge_service.store import explained as explained_form
from judge_service.store import rubrics as rubric_form

DATA = Path(__file__).resolve().parents[1] / "data"
DATABASES = sorted(DATA.glob("judgements-*.sqlite3"))
# Written by the build just before the stored form existed: its documents must come back unchanged.
LAST_WIRE_FORM = DATA / "judgements-11ef8eb.sqlite3"


def documents(path: Path) -> list[str]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return [doc for (doc,) in conn.execute("SELECT doc FROM judgements ORDER BY rowid")]


def kept(old: Any, new: Any, where: str = "$") -> None:
    """Everything `old` held is in `new` with the same value (new may hold more: defaults added later)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for key, value in old.items():
            assert key in new, f"{where}.{key} was dropped"
            kept(value, new[key], f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            kept(a, b, f"{where}[{index}]")
    else:
        assert old == new, f"{where}: {old!r} became {new!r}"


# The defaults of request fields added since the last wire-form build (reason_language, number_locale).
REQUEST_DEFAULTS_ADDED = (
    None,
    "auto",
    0,
    "1-5",
)  # 0: usage.reasoning_tokens; None: length_bias too; "1-5": scale


def drop_added(old: dict[str, Any], new: dict[str, Any], where: str = "request") -> dict[str, Any]:
    """Remove from `new` (in place) the keys `old` lacks, at any depth; what was removed, by path."""
    added: dict[str, Any] = {}
    for key in list(new):
        if key not in old:
            added[f"{where}.{key}"] = new.pop(key)
        elif isinstance(old[key], dict) and isinstance(new[key], dict):
            added |= drop_added(old[key], new[key], f"{where}.{key}")
        elif isinstance(old[key], list) and isinstance(new[key], list):
            for index, (a, b) in enumerate(zip(old[key], new[key], strict=False)):
                if isinstance(a, dict) and isinstance(b, dict):
                    added |= drop_added(a, b, f"{where}.{key}[{index}]")
    return added


def test_the_fixtures_cover_several_builds_and_every_feature_they_stored() -> None:
    assert {p.name for p in DATABASES} >= {"judgements-4b52f6d.sqlite3", LAST_WIRE_FORM.name}
    docs = [json.loads(d) for p in DATABASES for d in documents(p)]
    assert len(docs) >= 9
    marks = [m for d in docs for a in d["answers"] for m in (a.get("criteria") or {}).values()]
    assert any(m.get("expected_mark") is not None for m in marks), "no expected marks stored"
    assert any(d.get("regrade_of") for d in docs) and any(d["status"] == "failed" for d in docs)
    assert any(a.get("terms") for d in docs for a in d["answers"])
    terms = [t for d in docs for a in d["answers"] for t in a.get("terms") or []]
    assert any(t.get("details") for t in terms), "no code grader's explanation fields stored"
    assert any(d["request"].get("item") for d in docs), "no task row (item) stored"
    thinking = [t for d in docs for t in d.get("thinking") or []]
    assert any(t["text"] and t["budget_exhausted"] for t in thinking), "no thinking within a budget stored"
    assert any(not t["ended"] for t in thinking) and any(t["recovered"] for t in thinking)
    canaries = [c for d in docs for c in d.get("canaries") or []]
    assert {"injection", "reference_twist"} <= {c["kind"] for c in canaries}, "no canaries stored"
    assert any(c.get("terms") for c in canaries), "no blended canary stored"
    assert any(d.get("length_bias") is not None for d in docs), "no length bias stored"
    assert any("canaries" not in d for d in docs if d.get("length_bias") is not None)
    assert {d.get("reasons") for d in docs} >= {None, "inline", "none"}, "no marks-only judgement stored"
    assert any(m.get("reason") is None for m in marks) and any(m.get("reason") for m in marks)
    assert [r for p in DATABASES for r in explained(p)], "no reasons written afterwards stored"
    assert any(d.get("rubric") for d in docs), "no judgement on a rubric stored"
    assert any(m.get("met") is not None and m.get("mark") is None for m in marks), "no checklist item stored"
    assert any(m.get("met_probability") is not None for m in marks) and any(m.get("kind") for m in marks)
    comparisons = [c for d in docs for c in d.get("comparisons") or []]
    assert {d["grader"] for d in docs if d.get("comparisons")} == {"pairwise", "knockout"}, "no comparisons"
    assert any(c["verdict"] is None and c["error"] for c in comparisons), "no failed comparison stored"
    assert any(c["round"] for c in comparisons) and any(c["preference"] == 0.5 for c in comparisons)
    tallies = [a["comparison"] for d in docs for a in d["answers"] if a.get("comparison")]
    assert any(t.get("byes") for t in tallies) and any(t["failed"] for t in tallies)
    jurors = [r for d in docs for r in d.get("jury") or []]
    assert any(not r["called"] for r in jurors) and any(r["escalation"] for r in jurors), "no escalation"
    assert any(r["error"] for r in jurors) and any(r["raw_outputs"] for r in jurors), "no failed judge stored"
    verdicts = [a["jury"] for d in docs for a in d["answers"] if a.get("jury")]
    assert any(v["missing"] for v in verdicts) and any(v["spread"] for v in verdicts), "no jury verdicts"
    assert {d.get("cascade") for d in docs} >= {"rule_only", "judged"}, "no cascade stored"
    assert {a.get("scored_by") for d in docs for a in d["answers"]} >= {"rule", "judge"}
    trajectories = [a for d in docs for a in d["request"]["answers"] if a.get("messages")]
    assert trajectories and any(d["request"].get("tools") for d in docs), "no trajectory stored"
    attributed = [m["attribution"] for m in marks if m.get("attribution")]
    assert any(a["first_wrong_step"] for a in attributed) and any(a["steps"] == [] for a in attributed)
    assert any("names step" in (a.get("error") or "") for d in docs for a in d["answers"]), (
        "no bad step stored"
    )


def test_stored_rubrics_load_with_every_version() -> None:
    found = []
    for path in DATABASES:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "rubrics" in tables:
                found += [doc for (doc,) in conn.execute("SELECT doc FROM rubrics ORDER BY id, version")]
    rubrics = [rubric_form.load(doc) for doc in found]
    assert [(r.version, r.source) for r in rubrics] == [(1, "generated"), (2, "edited")]
    assert all(c.binary for c in rubrics[0].criteria) and rubrics[1].note


def explained(path: Path) -> list[tuple[str, str]]:
    """(judgement id, document) of the reasons written afterwards a database holds (their own table, from
    migration m008 on)."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "explained_reasons" not in tables:
            return []
        return conn.execute(
            "SELECT judgement_id, doc FROM explained_reasons ORDER BY judgement_id"
        ).fetchall()


@pytest.mark.parametrize("database", DATABASES, ids=lambda p: p.name)
def test_every_stored_reason_written_afterwards_loads_and_names_answers_of_its_judgement(
    database: Path,
) -> None:
    judgements = {j.judgement_id: j for j in map(codec.load_judgement, documents(database))}
    for judgement_id, doc in explained(database):
        reasons = explained_form.load(doc)
        judged = judgements[judgement_id]
        assert judged.reasons == "none" and set(reasons.answers) <= {a.id for a in judged.answers}


@pytest.mark.parametrize("database", DATABASES, ids=lambda p: p.name)
def test_every_stored_document_loads_and_is_written_back_with_all_it_held(database: Path) -> None:
    for doc in documents(database):
        judgement = codec.load_judgement(doc)
        assert isinstance(judgement, StoredJudgement)
        item = codec.page_item(doc)
        assert item == judgement.response()
        rewritten = stored_form.document(judgement)
        # the fast write (the wire dump, cut to the stored fields) is the stored model's own dump
        assert rewritten == stored_form.dump(stored_form.to_stored(judgement))
        assert stored_form.from_stored(stored_form.load(doc)) == judgement
        kept(json.loads(doc), json.loads(rewritten))
        assert codec.load_judgement(rewritten) == judgement
        if database == LAST_WIRE_FORM:
            old, new = json.loads(doc), json.loads(rewritten)
            # Fields added since (request options, a term's code-grader details) appear at their defaults.
            added = drop_added(old, new, "")
            assert all(value in REQUEST_DEFAULTS_ADDED for value in added.values()), added
            assert new == old and list(new) == list(old)


# Found by walking the stored judgement beside the wire one, so a grader kind's new pair is checked too.
WIRE_AND_STORED: list[tuple[type[BaseModel], type[BaseModel]]] = [
    *stored_form.stored_pairs(),
    (JudgeResponse, stored_form.StoredJudgementV1),
]


def test_the_walk_finds_every_kinds_stored_model() -> None:
    found = {stored.__name__ for _, stored in WIRE_AND_STORED}
    assert {"ComparisonTallyV1", "ComparisonRecordV1", "AnswerJuryV1", "JurorRecordV1", "UsageV1"} <= found


@pytest.mark.parametrize(("wire", "stored"), WIRE_AND_STORED, ids=lambda m: m.__name__)
def test_every_wire_field_is_stored_or_named_as_not_stored(
    wire: type[BaseModel], stored: type[BaseModel]
) -> None:
    missing = (
        set(wire.model_fields) - set(stored.model_fields) - stored_form.NOT_STORED.get(wire.__name__, set())
    )
    assert not missing, (
        f"{wire.__name__} fields {sorted(missing)} are not in the stored form: add them to "
        f"store/stored_form/ (with a default) or to NOT_STORED"
    )
