-- QueueBox outbox for PostgreSQL, version 5: the insert notification names the rows it is about.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see docs/reference/postgres-schema.md.
-- Idempotent: the function is replaced, the trigger is created only when it is missing; running this script
-- again never changes whether a trigger is enabled.
--
-- A row-level AFTER INSERT trigger, <table>_notify_rows, calls pg_notify on the table's channel with the row's
-- event id, for the first 100 rows a transaction inserts into the table, then once with an empty payload (PostgreSQL folds
-- identical notifications of a transaction into one). A relay that is told which rows arrived skips the claim when
-- it claimed them already (a claim that started between the commit and the notification took them), as it does
-- for capture; an empty payload wakes it as before. Notifications are delivered at commit only, none for a
-- rolled-back transaction. The cost on the insert ceiling is in docs/concepts/delivery.md ("Wake-ups").
--
-- It replaces version 4's statement trigger, <table>_notify, which stays, disabled, and its function untouched: a
-- trigger renamed from it still works. The new trigger takes over the old one's state when it is created
-- (disabled, or enabled as the old one was, which is then disabled: both would notify every commit); afterwards
-- 'queuebox migrate' enables and disables it. A disabled row trigger costs a statement nothing measurable (a
-- trigger with a transition table would copy every inserted row even while disabled). Creating a trigger and
-- disabling one take SHARE ROW EXCLUSIVE on the table, which a claim's row locks do not conflict with.

DO $queuebox$
DECLARE
    channel text := '${queuebox_schema}' || '.' || '${queuebox_table}';
    -- The count of rows notified, per table: a transaction that fills one table's hundred still notifies another's.
    counter text := 'queuebox.notified_' || left(md5('${queuebox_schema}' || '.' || '${queuebox_table}'), 16);
    old_state "char";
BEGIN
    IF octet_length(channel) > 63 THEN
        channel := left(channel, 30) || '_' || md5(channel);
    END IF;

    EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.%2$I() RETURNS trigger
    LANGUAGE plpgsql AS $body$
DECLARE
    named integer := coalesce(nullif(current_setting(%4$L, true), '')::integer, 0);
BEGIN
    IF named < 100 THEN
        PERFORM pg_notify(%3$L, NEW.event_id::text);
    ELSIF named = 100 THEN
        PERFORM pg_notify(%3$L, '');
    END IF;
    IF named <= 100 THEN
        PERFORM set_config(%4$L, (named + 1)::text, true);
    END IF;
    RETURN NULL;
END
$body$
$function$, '${queuebox_schema}', '${queuebox_table}_notify_rows', channel, counter);

    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = format('%I.%I', '${queuebox_schema}', '${queuebox_table}')::regclass
                   AND tgname = '${queuebox_table}_notify_rows') THEN
        SELECT t.tgenabled INTO old_state FROM pg_catalog.pg_trigger t
        WHERE t.tgrelid = format('%I.%I', '${queuebox_schema}', '${queuebox_table}')::regclass
          AND t.tgname = '${queuebox_table}_notify';
        EXECUTE format('CREATE TRIGGER %1$I AFTER INSERT ON %2$I.%3$I FOR EACH ROW EXECUTE FUNCTION %2$I.%1$I()',
                '${queuebox_table}_notify_rows', '${queuebox_schema}', '${queuebox_table}');
        IF old_state IS NULL OR old_state = 'D' THEN
            EXECUTE format('ALTER TABLE %2$I.%3$I DISABLE TRIGGER %1$I',
                    '${queuebox_table}_notify_rows', '${queuebox_schema}', '${queuebox_table}');
        ELSE
            IF old_state <> 'O' THEN
                EXECUTE format('ALTER TABLE %2$I.%3$I ENABLE %4$s TRIGGER %1$I',
                        '${queuebox_table}_notify_rows', '${queuebox_schema}', '${queuebox_table}',
                        CASE old_state WHEN 'A' THEN 'ALWAYS' ELSE 'REPLICA' END);
            END IF;
            EXECUTE format('ALTER TABLE %2$I.%3$I DISABLE TRIGGER %1$I',
                    '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}');
        END IF;
    END IF;
END
$queuebox$;
