-- QueueBox outbox for SQL Server (2016 or later, database compatibility level 130 or higher for OPENJSON),
-- version 1. Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see
-- docs/reference/sqlserver.md. Batches are separated by GO, which Flyway understands. Every batch is
-- idempotent, so the script may also run against a database that already has the table.

IF SCHEMA_ID(N'${queuebox_schema}') IS NULL
    EXEC(N'CREATE SCHEMA [${queuebox_schema}]');
GO

IF OBJECT_ID(N'[${queuebox_schema}].[${queuebox_table}]', N'U') IS NULL
CREATE TABLE [${queuebox_schema}].[${queuebox_table}] (
    seq             bigint           IDENTITY(1, 1) NOT NULL,
    event_id        uniqueidentifier NOT NULL,
    aggregate_type  nvarchar(255)    NOT NULL,
    aggregate_id    nvarchar(255)    NOT NULL,
    event_type      nvarchar(255)    NOT NULL,
    destination     nvarchar(255)    NULL,
    payload         varbinary(max)   NOT NULL,
    content_type    nvarchar(255)    NOT NULL CONSTRAINT [${queuebox_table}_content_type_df] DEFAULT N'application/json',
    headers         nvarchar(max)    NOT NULL CONSTRAINT [${queuebox_table}_headers_df] DEFAULT N'{}',
    created_at      datetime2(7)     NOT NULL CONSTRAINT [${queuebox_table}_created_at_df] DEFAULT SYSUTCDATETIME(),
    status          varchar(7)       NOT NULL CONSTRAINT [${queuebox_table}_status_df] DEFAULT 'pending',
    attempts        int              NOT NULL CONSTRAINT [${queuebox_table}_attempts_df] DEFAULT 0,
    next_attempt_at datetime2(7)     NOT NULL CONSTRAINT [${queuebox_table}_next_attempt_at_df] DEFAULT SYSUTCDATETIME(),
    lease_owner     nvarchar(255)    NULL,
    lease_token     uniqueidentifier NULL,
    lease_until     datetime2(7)     NULL,
    last_error      nvarchar(max)    NULL,
    sent_at         datetime2(7)     NULL,
    -- Rows are stored in write order; a random uniqueidentifier as clustering key would scatter inserts.
    CONSTRAINT [${queuebox_table}_seq_cx] UNIQUE CLUSTERED (seq),
    CONSTRAINT [${queuebox_table}_pk] PRIMARY KEY NONCLUSTERED (event_id),
    CONSTRAINT [${queuebox_table}_status_check] CHECK (status IN ('pending', 'sent', 'parked')),
    CONSTRAINT [${queuebox_table}_headers_check] CHECK (ISJSON(headers) = 1)
);
GO

-- The claim walks pending rows in write order and checks readiness without a lookup.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[${queuebox_schema}].[${queuebox_table}]')
               AND name = N'${queuebox_table}_pending_seq_idx')
CREATE INDEX [${queuebox_table}_pending_seq_idx] ON [${queuebox_schema}].[${queuebox_table}] (seq)
    INCLUDE (event_id, next_attempt_at, lease_until, aggregate_type, aggregate_id)
    WHERE status = 'pending';
GO

-- Per-aggregate ordering looks for an earlier unsent row of the same aggregate (pending, or parked).
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[${queuebox_schema}].[${queuebox_table}]')
               AND name = N'${queuebox_table}_unsent_aggregate_idx')
CREATE INDEX [${queuebox_table}_unsent_aggregate_idx] ON [${queuebox_schema}].[${queuebox_table}]
    (aggregate_type, aggregate_id, seq)
    INCLUDE (event_id, status, next_attempt_at, lease_until)
    WHERE status IN ('pending', 'parked');
GO

-- Renew finds a claim's rows by its lease token alone, with a forced seek. Not filtered: a filtered index is
-- ignored under forced parameterization, and the forced seek would then have no index to use.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[${queuebox_schema}].[${queuebox_table}]')
               AND name = N'${queuebox_table}_lease_token_idx')
CREATE INDEX [${queuebox_table}_lease_token_idx] ON [${queuebox_schema}].[${queuebox_table}] (lease_token);
GO

-- Purge deletes the oldest sent rows first.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[${queuebox_schema}].[${queuebox_table}]')
               AND name = N'${queuebox_table}_sent_at_idx')
CREATE INDEX [${queuebox_table}_sent_at_idx] ON [${queuebox_schema}].[${queuebox_table}] (sent_at)
    WHERE status = 'sent';
GO

-- Operators list and replay parked rows in write order.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[${queuebox_schema}].[${queuebox_table}]')
               AND name = N'${queuebox_table}_parked_seq_idx')
CREATE INDEX [${queuebox_table}_parked_seq_idx] ON [${queuebox_schema}].[${queuebox_table}] (seq)
    WHERE status = 'parked';
GO

IF OBJECT_ID(N'[${queuebox_schema}].[queuebox_capture_state]', N'U') IS NULL
CREATE TABLE [${queuebox_schema}].[queuebox_capture_state] (
    [identity]     nvarchar(64)  NOT NULL CONSTRAINT [queuebox_capture_state_pk] PRIMARY KEY,
    mode           nvarchar(32)  NOT NULL,
    fingerprint    nvarchar(max) NOT NULL,
    first_run_at   datetime2(7)  NOT NULL,
    last_run_at    datetime2(7)  NOT NULL,
    state          nvarchar(64)  NULL,
    fault_reason   nvarchar(max) NULL,
    status_at      datetime2(7)  NULL
);
GO
