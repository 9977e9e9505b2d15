-- QueueBox inbox for PostgreSQL, version 1.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_inbox_table}; see docs/how-to/process-once.md.
-- The table has a placeholder of its own, so one Flyway run can name the outbox table and the inbox table apart.
-- Every statement is idempotent, so the script may also run against a database that already has the table.

CREATE SCHEMA IF NOT EXISTS "${queuebox_schema}";

-- One row per event a consumer processed; the primary key is what makes a second insert a duplicate.
CREATE TABLE IF NOT EXISTS "${queuebox_schema}"."${queuebox_inbox_table}" (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "${queuebox_inbox_table}_pkey" PRIMARY KEY (consumer, event_id)
);

-- Purge deletes the oldest entries first.
CREATE INDEX IF NOT EXISTS "${queuebox_inbox_table}_purge_idx"
    ON "${queuebox_schema}"."${queuebox_inbox_table}" (processed_at);
