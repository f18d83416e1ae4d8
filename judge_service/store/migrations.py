"""Named schema migrations, recorded in a table of their own, for every store backend.

Each migration has a name (`m001_judgements`) and its SQL per dialect; a database records the names it
has applied in `schema_migrations(name, applied_at)`, so one list serves every backend and a database
says exactly what it holds. The list is append-only: never edit or reorder a migration that has shipped
(databases in the field ran it); add a new one. Plain CREATE (no IF NOT EXISTS) on purpose, so an
accidental re-run fails loudly. A store applies each pending migration, with its name recorded, in one
transaction, under a lock taken before reading what is applied, so two processes opening one database
cannot both apply a step.

Databases made before names were recorded carry their step count in SQLite's `PRAGMA user_version`;
they are adopted by recording the first that many names (`adopted_names`). SQLite stores keep
user_version equal to the number applied, so an older build, which reads only user_version, still
refuses a database that a newer build migrated further.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SQLITE = "sqlite"
POSTGRES = "postgres"

_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
)
MIGRATIONS_TABLE_SQL: Mapping[str, str] = {SQLITE: _MIGRATIONS_TABLE, POSTGRES: _MIGRATIONS_TABLE}


# m005's columns, the same in both dialects (SQLite takes INTEGER/REAL/TEXT; PostgreSQL BIGINT/DOUBLE).
_SUMMARY_COLUMNS_SQL = (
    ";\n".join(
        f"ALTER TABLE judgements ADD COLUMN {column}"
        for column in (
            "grader_fingerprint TEXT",
            "regrade_of TEXT",
            "answers BIGINT",
            "scored BIGINT",
            "score_sum DOUBLE PRECISION",
            "score_sq DOUBLE PRECISION",
            "flat BOOLEAN",
            "order_sensitivity DOUBLE PRECISION",
            "prompt_tokens BIGINT",
            "completion_tokens BIGINT",
            "judge_ms DOUBLE PRECISION",
        )
    )
    + ";"
)


_WATCH_COLUMNS_SQL = (
    "ALTER TABLE judgements ADD COLUMN canary_kind TEXT;\n"
    "ALTER TABLE judgements ADD COLUMN canary_outranked BOOLEAN;\n"
    "ALTER TABLE judgements ADD COLUMN length_bias DOUBLE PRECISION;"
)


_LABELS_SQL = """
CREATE TABLE human_labels (
    judgement_id TEXT NOT NULL,
    labeler      TEXT NOT NULL,
    run_id       TEXT,
    doc          TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (judgement_id, labeler)
);
CREATE INDEX human_labels_run ON human_labels (run_id);
CREATE INDEX judgements_regrade_of ON judgements (regrade_of);
"""


_EXPLAINED_SQL = """
CREATE TABLE explained_reasons (
    judgement_id TEXT PRIMARY KEY,
    doc          TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
"""


_RUBRICS_SQL = """
CREATE TABLE rubrics (
    id         TEXT NOT NULL,
    version    INTEGER NOT NULL,
    doc        TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (id, version)
);
"""


# IF NOT EXISTS, unlike every other migration, on purpose: on a large PostgreSQL table an operator builds
# it beforehand without blocking writes (CREATE INDEX CONCURRENTLY judgements_created_at ON judgements
# (created_at)), and the migration then finds it there.
_CREATED_AT_SQL = "CREATE INDEX IF NOT EXISTS judgements_created_at ON judgements (created_at);"


_AUDITS_SQL = """
CREATE TABLE audits (
    judgement_id     TEXT PRIMARY KEY,
    run_id           TEXT NOT NULL,
    step             BIGINT NOT NULL,
    answers          BIGINT NOT NULL,
    rank_correlation DOUBLE PRECISION,
    gap              DOUBLE PRECISION,
    best_differs     BOOLEAN,
    criterion_gaps   TEXT NOT NULL,
    doc              TEXT NOT NULL,
    created_at       TEXT NOT NULL
);
CREATE INDEX audits_run_step ON audits (run_id, step);
"""


@dataclass(frozen=True)
class Migration:
    name: str
    sql: Mapping[str, str]  # dialect -> script of one or more statements

    def script(self, dialect: str) -> str:
        try:
            return self.sql[dialect]
        except KeyError:
            raise RuntimeError(f"migration {self.name} has no SQL for {dialect}") from None


MIGRATIONS: tuple[Migration, ...] = (
    # AUTOINCREMENT so a rowid is never reused, even after pruning: a cursor a caller holds must never
    # skip rows written later.
    Migration(
        "m001_judgements",
        {
            SQLITE: """
            CREATE TABLE judgements (
                id             INTEGER PRIMARY KEY AUTOINCREMENT,
                judgement_id   TEXT NOT NULL UNIQUE,
                created_at     TEXT NOT NULL,
                run_id         TEXT,
                step           INTEGER,
                group_key      TEXT,
                grader         TEXT NOT NULL,
                judge_model    TEXT,
                prompt_version TEXT,
                status         TEXT NOT NULL,
                doc            TEXT NOT NULL
            );
            CREATE INDEX judgements_run_step ON judgements (run_id, step, id);
            CREATE INDEX judgements_run ON judgements (run_id, id);
            """,
            # The document stays TEXT (not JSONB): stored byte for byte as on SQLite, read back by the
            # same codec. `id` is the paging position (store/postgres.py keeps it in commit order).
            POSTGRES: """
            CREATE TABLE judgements (
                id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                judgement_id   TEXT NOT NULL UNIQUE,
                created_at     TEXT NOT NULL,
                run_id         TEXT,
                step           BIGINT,
                group_key      TEXT,
                grader         TEXT NOT NULL,
                judge_model    TEXT,
                prompt_version TEXT,
                status         TEXT NOT NULL,
                doc            TEXT NOT NULL
            );
            CREATE INDEX judgements_run_step ON judgements (run_id, step, id);
            CREATE INDEX judgements_run ON judgements (run_id, id);
            """,
        },
    ),
    # Idempotency keys (judge_service/idempotency.py). The unique index settles a race between two
    # requests with the same key: one insert wins, the other reads the winner. NULLs do not collide.
    Migration(
        "m002_idempotency_keys",
        {
            SQLITE: """
            ALTER TABLE judgements ADD COLUMN idempotency_key TEXT;
            ALTER TABLE judgements ADD COLUMN request_hash TEXT;
            CREATE UNIQUE INDEX judgements_idempotency_key ON judgements (idempotency_key);
            """,
            POSTGRES: """
            ALTER TABLE judgements ADD COLUMN idempotency_key TEXT;
            ALTER TABLE judgements ADD COLUMN request_hash TEXT;
            CREATE UNIQUE INDEX judgements_idempotency_key ON judgements (idempotency_key);
            """,
        },
    ),
    # Claims on idempotency keys still being judged (judge_service/idempotency.py): one row per key, held
    # by one process (`owner`) until `lease_until` (seconds since the epoch on the database's clock, so
    # replicas never compare their own clocks). Deleted in the transaction that stores the judgement.
    Migration(
        "m003_idempotency_claims",
        {
            SQLITE: """
            CREATE TABLE idempotency_claims (
                idempotency_key TEXT PRIMARY KEY,
                request_hash    TEXT NOT NULL,
                owner           TEXT NOT NULL,
                lease_until     REAL NOT NULL
            );
            """,
            POSTGRES: """
            CREATE TABLE idempotency_claims (
                idempotency_key TEXT PRIMARY KEY,
                request_hash    TEXT NOT NULL,
                owner           TEXT NOT NULL,
                lease_until     DOUBLE PRECISION NOT NULL
            );
            """,
        },
    ),
    # Groups assembled from member requests across replicas (judge_service/assembly/shared.py): the
    # first member's group fields, the deadline on the database's clock, and each member's answer.
    Migration(
        "m004_member_groups",
        {
            SQLITE: """
            CREATE TABLE member_groups (
                group_key   TEXT PRIMARY KEY,
                fields      TEXT NOT NULL,
                size        INTEGER NOT NULL,
                min_members INTEGER NOT NULL,
                deadline_at REAL NOT NULL,
                closed_at   REAL
            );
            CREATE TABLE group_members (
                group_key TEXT NOT NULL REFERENCES member_groups (group_key) ON DELETE CASCADE,
                answer_id TEXT NOT NULL,
                text      TEXT NOT NULL,
                PRIMARY KEY (group_key, answer_id)
            );
            CREATE INDEX member_groups_closed_at ON member_groups (closed_at);
            """,
            POSTGRES: """
            CREATE TABLE member_groups (
                group_key   TEXT PRIMARY KEY,
                fields      TEXT NOT NULL,
                size        INTEGER NOT NULL,
                min_members INTEGER NOT NULL,
                deadline_at DOUBLE PRECISION NOT NULL,
                closed_at   DOUBLE PRECISION
            );
            CREATE TABLE group_members (
                group_key TEXT NOT NULL REFERENCES member_groups (group_key) ON DELETE CASCADE,
                answer_id TEXT NOT NULL,
                text      TEXT NOT NULL,
                PRIMARY KEY (group_key, answer_id)
            );
            CREATE INDEX member_groups_closed_at ON member_groups (closed_at);
            """,
        },
    ),
    # Per-judgement figures the run pages aggregate by step and run (store/run_views.py), so that no
    # page parses documents: the grader fingerprint, answers and scored answers, the sum and sum of
    # squares of the scores (mean and spread by step), whether the group is flat (>= 2 scored, all
    # equal: no GRPO signal), order sensitivity, judge tokens and time. Judgements stored before are
    # filled in from their documents by the same migration.
    Migration(
        "m005_judgement_summaries",
        {
            SQLITE: f"""
            {_SUMMARY_COLUMNS_SQL}
            UPDATE judgements SET
                grader_fingerprint = json_extract(doc, '$.grader_fingerprint'),
                regrade_of = json_extract(doc, '$.regrade_of'),
                answers = json_array_length(doc, '$.answers'),
                scored = (SELECT COUNT(*) FROM json_each(doc, '$.answers')
                          WHERE json_extract(value, '$.score') IS NOT NULL),
                score_sum = (SELECT SUM(json_extract(value, '$.score')) FROM json_each(doc, '$.answers')),
                score_sq = (SELECT SUM(json_extract(value, '$.score') * json_extract(value, '$.score'))
                            FROM json_each(doc, '$.answers')),
                order_sensitivity = json_extract(doc, '$.order_sensitivity'),
                prompt_tokens = json_extract(doc, '$.usage.prompt_tokens'),
                completion_tokens = json_extract(doc, '$.usage.completion_tokens'),
                judge_ms = json_extract(doc, '$.timings.judge_ms');
            UPDATE judgements SET flat = CASE WHEN scored >= 2 THEN
                (SELECT COUNT(DISTINCT ROUND(json_extract(value, '$.score'), 6))
                 FROM json_each(doc, '$.answers')
                 WHERE json_extract(value, '$.score') IS NOT NULL) = 1 END;
            CREATE INDEX judgements_run_fingerprint ON judgements (run_id, grader_fingerprint);
            """,
            POSTGRES: f"""
            {_SUMMARY_COLUMNS_SQL}
            UPDATE judgements AS j SET
                grader_fingerprint = d.doc->>'grader_fingerprint',
                regrade_of = d.doc->>'regrade_of',
                answers = jsonb_array_length(d.doc->'answers'),
                scored = (SELECT COUNT(*) FROM jsonb_array_elements(d.doc->'answers') a
                          WHERE jsonb_typeof(a->'score') = 'number'),
                score_sum = (SELECT SUM((a->>'score')::double precision)
                             FROM jsonb_array_elements(d.doc->'answers') a),
                score_sq = (SELECT SUM(((a->>'score')::double precision) ^ 2)
                            FROM jsonb_array_elements(d.doc->'answers') a),
                order_sensitivity = (d.doc->>'order_sensitivity')::double precision,
                prompt_tokens = (d.doc->'usage'->>'prompt_tokens')::bigint,
                completion_tokens = (d.doc->'usage'->>'completion_tokens')::bigint,
                judge_ms = (d.doc->'timings'->>'judge_ms')::double precision
            FROM (SELECT id, doc::jsonb AS doc FROM judgements) AS d WHERE d.id = j.id;
            UPDATE judgements AS j SET flat = CASE WHEN j.scored >= 2 THEN
                (SELECT COUNT(DISTINCT ROUND((a->>'score')::numeric, 6))
                 FROM jsonb_array_elements(j.doc::jsonb->'answers') a
                 WHERE jsonb_typeof(a->'score') = 'number') = 1 END;
            CREATE INDEX judgements_run_fingerprint ON judgements (run_id, grader_fingerprint);
            """,
        },
    ),
    # A person's own marks or ranks for a group's answers (the run pages' "score it yourself"), one
    # document per (judgement, labeler) in the HumanLabels format `judge-service agreement` reads. The
    # run id is copied from the judgement so a run's labels are one indexed read.
    Migration(
        "m006_human_labels",
        {
            SQLITE: _LABELS_SQL,
            POSTGRES: _LABELS_SQL,
        },
    ),
    # The run watch's per-judgement figures (judge_service/watch/): the canary's kind and whether it
    # outranked its group, and the length bias. Judgements stored before had no canary; their length bias
    # stays null (a rank correlation per document is no job for a migration's SQL).
    Migration(
        "m007_watch_summaries",
        {
            SQLITE: _WATCH_COLUMNS_SQL,
            POSTGRES: _WATCH_COLUMNS_SQL,
        },
    ),
    # Reasons written afterwards for marks-only judgements (store/explained.py), apart from the judgement.
    Migration(
        "m008_explained_reasons",
        {
            SQLITE: _EXPLAINED_SQL,
            POSTGRES: _EXPLAINED_SQL,
        },
    ),
    # Checklist rubrics per prompt (store/rubrics.py), one row per version.
    Migration(
        "m009_rubrics",
        {
            SQLITE: _RUBRICS_SQL,
            POSTGRES: _RUBRICS_SQL,
        },
    ),
    # Retention (store/retention.py) deletes the oldest judgements first, by this index.
    Migration(
        "m010_created_at_index",
        {
            SQLITE: _CREATED_AT_SQL,
            POSTGRES: _CREATED_AT_SQL,
        },
    ),
    # The audit judge's re-judged groups (store/audits.py), read per run in step order.
    Migration(
        "m011_audits",
        {
            SQLITE: _AUDITS_SQL,
            POSTGRES: _AUDITS_SQL,
        },
    ),
)


def pending(applied: Sequence[str], migrations: Sequence[Migration], *, where: str) -> list[Migration]:
    """The migrations still to apply, in order. RuntimeError when the database holds a migration this
    build does not know (a newer build made it) or applied them out of order."""
    names = [m.name for m in migrations]
    unknown = [name for name in applied if name not in names]
    if unknown:
        raise RuntimeError(
            f"judgement database {where} has migration(s) {', '.join(unknown)} that this build does not "
            f"know (a newer schema version); upgrade judge-service or use another database"
        )
    if list(applied) != names[: len(applied)]:
        raise RuntimeError(
            f"judgement database {where} has migrations {', '.join(applied)}, not a prefix of this "
            f"build's {', '.join(names)}"
        )
    return list(migrations[len(applied) :])


def adopted_names(user_version: int, migrations: Sequence[Migration], *, where: str) -> list[str]:
    """The names a pre-names database at `user_version` has applied (module docstring)."""
    if user_version > len(migrations):
        raise RuntimeError(
            f"judgement database {where} is at schema version {user_version}, but this build knows only "
            f"up to {len(migrations)}; upgrade judge-service or use another database"
        )
    return [m.name for m in migrations[:user_version]]
