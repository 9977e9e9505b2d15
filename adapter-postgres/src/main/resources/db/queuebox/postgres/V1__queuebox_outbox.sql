-- QueueBox outbox for PostgreSQL, version 1.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see docs/reference/postgres-schema.md.
-- Every statement is idempotent, so the script may also run against a database that already has the table.

CREATE SCHEMA IF NOT EXISTS "${queuebox_schema}";

CREATE TABLE IF NOT EXISTS "${queuebox_schema}"."${queuebox_table}" (
    event_id        uuid        NOT NULL PRIMARY KEY,
    seq             bigint      GENERATED ALWAYS AS IDENTITY,
    aggregate_type  text        NOT NULL,
    aggregate_id    text        NOT NULL,
    event_type      text        NOT NULL,
    destination     text,
    payload         bytea       NOT NULL,
    content_type    text        NOT NULL DEFAULT 'application/json',
    headers         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    status          text        NOT NULL DEFAULT 'pending'
                                CONSTRAINT "${queuebox_table}_status_check" CHECK (status IN ('pending', 'sent', 'parked')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_owner     text,
    lease_token     uuid,
    lease_until     timestamptz,
    last_error      text,
    sent_at         timestamptz
);

-- The claim walks pending rows in write order.
CREATE INDEX IF NOT EXISTS "${queuebox_table}_pending_seq_idx"
    ON "${queuebox_schema}"."${queuebox_table}" (seq) WHERE status = 'pending';

-- Per-aggregate ordering looks for an earlier unsent row of the same aggregate (pending, or parked).
CREATE INDEX IF NOT EXISTS "${queuebox_table}_unsent_aggregate_idx"
    ON "${queuebox_schema}"."${queuebox_table}" (aggregate_type, aggregate_id, seq) WHERE status <> 'sent';

-- When a pending row is ready on its own (due, lease expired; greatest() ignores a null lease). The claim
-- finds the rows that hold back their aggregate (ready later than now) through it, and the next-due time
-- is its minimum.
CREATE INDEX IF NOT EXISTS "${queuebox_table}_pending_ready_idx"
    ON "${queuebox_schema}"."${queuebox_table}" ((greatest(next_attempt_at, lease_until))) WHERE status = 'pending';

-- Purge deletes the oldest sent rows first.
CREATE INDEX IF NOT EXISTS "${queuebox_table}_sent_at_idx"
    ON "${queuebox_schema}"."${queuebox_table}" (sent_at) WHERE status = 'sent';

-- Operators list and replay parked rows in write order.
CREATE INDEX IF NOT EXISTS "${queuebox_table}_parked_seq_idx"
    ON "${queuebox_schema}"."${queuebox_table}" (seq) WHERE status = 'parked';

CREATE TABLE IF NOT EXISTS "${queuebox_schema}"."queuebox_capture_state" (
    identity       text        NOT NULL PRIMARY KEY,
    mode           text        NOT NULL,
    fingerprint    text        NOT NULL,
    first_run_at   timestamptz NOT NULL,
    last_run_at    timestamptz NOT NULL,
    state          text,
    fault_reason   text,
    status_at      timestamptz
);
