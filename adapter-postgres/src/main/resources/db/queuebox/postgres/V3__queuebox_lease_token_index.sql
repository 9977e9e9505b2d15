-- QueueBox outbox for PostgreSQL, version 3: renewing a lease finds the claim's rows by its token.
-- Without this index every renewal walks all pending rows (110,000 rows removed by filter in one plan with
-- that backlog); with a large backlog renewals then fall behind the lease. Only leased rows are indexed.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see docs/reference/postgres-schema.md.

CREATE INDEX IF NOT EXISTS "${queuebox_table}_lease_token_idx"
    ON "${queuebox_schema}"."${queuebox_table}" (lease_token) WHERE lease_token IS NOT NULL;
