-- QueueBox inbox for SQL Server (2016 or later), version 1.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_inbox_table}; see docs/how-to/process-once.md.
-- Batches are separated by GO, which Flyway understands. Every batch is idempotent.

IF SCHEMA_ID(N'${queuebox_schema}') IS NULL
    EXEC(N'CREATE SCHEMA [${queuebox_schema}]');
GO

-- One row per event a consumer processed; the primary key is what makes a second insert a duplicate.
IF OBJECT_ID(N'[${queuebox_schema}].[${queuebox_inbox_table}]', N'U') IS NULL
CREATE TABLE [${queuebox_schema}].[${queuebox_inbox_table}] (
    consumer     nvarchar(200)    NOT NULL,
    event_id     uniqueidentifier NOT NULL,
    processed_at datetime2(3)     NOT NULL CONSTRAINT [${queuebox_inbox_table}_processed_at_df] DEFAULT SYSUTCDATETIME(),
    CONSTRAINT [${queuebox_inbox_table}_pk] PRIMARY KEY CLUSTERED (consumer, event_id)
);
GO

-- Purge deletes the oldest entries first.
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[${queuebox_schema}].[${queuebox_inbox_table}]')
               AND name = N'${queuebox_inbox_table}_purge_idx')
CREATE INDEX [${queuebox_inbox_table}_purge_idx] ON [${queuebox_schema}].[${queuebox_inbox_table}] (processed_at);
GO
