-- QueueBox outbox for PostgreSQL, version 4: inserts can notify the relays that listen (outbox.wake.mode: notify).
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see docs/reference/postgres-schema.md.
-- Idempotent: the function is replaced, the trigger is created only when it is missing, and created DISABLED:
-- 'queuebox migrate' enables it when outbox.wake.mode is notify (and disables it when it is poll); with your
-- own migrations, enable it yourself:
--     ALTER TABLE "<schema>"."<table>" ENABLE TRIGGER "<table>_notify";
-- Running this script again never changes whether the trigger is enabled.
--
-- A statement-level AFTER INSERT trigger calls pg_notify on the table's channel with an empty payload, so every
-- writer (QueueBox's writer, plain SQL, COPY) wakes the listening relays. PostgreSQL folds identical
-- notifications (same channel, same payload) of one transaction into one and delivers them at commit only: a
-- transaction sends one notification however many rows and statements it inserted, and a rolled-back one sends
-- none.
--
-- The channel: '<schema>.<table>' (at most 63 bytes, PostgreSQL's limit for a channel name); a longer one is
-- its first 30 characters, '_' and the md5 of the whole, as PostgresOutboxSettings.notifyChannel() computes it.
--
-- Why disabled until asked for: PostgreSQL serialises the commits of transactions that notify (a lock held from
-- just before the commit until after it, commit record flush included), whether or not anybody listens. One-row
-- transactions from 8 clients committed less than half as fast with the trigger enabled on a 2-core machine;
-- the figures are in docs/concepts/delivery.md ("Wake-ups"). A disabled trigger costs nothing measurable.

DO $queuebox$
DECLARE
    channel text := '${queuebox_schema}' || '.' || '${queuebox_table}';
BEGIN
    IF octet_length(channel) > 63 THEN
        channel := left(channel, 30) || '_' || md5(channel);
    END IF;

    EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.%2$I() RETURNS trigger
    LANGUAGE plpgsql AS $body$
BEGIN
    PERFORM pg_notify(%3$L, '');
    RETURN NULL;
END
$body$
$function$, '${queuebox_schema}', '${queuebox_table}_notify', channel);

    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = format('%I.%I', '${queuebox_schema}', '${queuebox_table}')::regclass
                   AND tgname = '${queuebox_table}_notify') THEN
        EXECUTE format('CREATE TRIGGER %1$I AFTER INSERT ON %2$I.%3$I FOR EACH STATEMENT EXECUTE FUNCTION %2$I.%1$I()',
                '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}');
        EXECUTE format('ALTER TABLE %2$I.%3$I DISABLE TRIGGER %1$I',
                '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}');
    END IF;
END
$queuebox$;
