-- QueueBox outbox for PostgreSQL, version 5: the insert notification names the rows it is about.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see docs/reference/postgres-schema.md.
-- Idempotent. Keeps whether the trigger of version 4 is enabled ('queuebox migrate' enables it when
-- outbox.wake.mode is notify): the trigger is dropped and created again in this script's transaction, since
-- only a trigger created with REFERENCING sees the rows of its statement.
--
-- The payload: the event ids of the statement's rows, comma-separated, when it inserted at most 100 (3,700 bytes,
-- under PostgreSQL's 8,000-byte limit for a payload); empty for a larger statement. A relay that is told which
-- rows arrived skips the claim when it claimed them already (a claim that started between the commit and the
-- notification took them), as it does for capture; an empty payload wakes it as before. Notifications with
-- different payloads are not folded: a transaction sends one per insert statement (one per transaction before),
-- still delivered at commit only, and none when it rolls back. The cost on the insert ceiling is in
-- docs/concepts/delivery.md ("Wake-ups").

DO $queuebox$
DECLARE
    channel text := '${queuebox_schema}' || '.' || '${queuebox_table}';
    enabled "char";
BEGIN
    IF octet_length(channel) > 63 THEN
        channel := left(channel, 30) || '_' || md5(channel);
    END IF;

    SELECT t.tgenabled INTO enabled FROM pg_catalog.pg_trigger t
    WHERE t.tgrelid = format('%I.%I', '${queuebox_schema}', '${queuebox_table}')::regclass
      AND t.tgname = '${queuebox_table}_notify';

    EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.%2$I() RETURNS trigger
    LANGUAGE plpgsql AS $body$
BEGIN
    PERFORM pg_notify(%3$L, CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM queuebox_inserted LIMIT 101) n) <= 100
        THEN (SELECT string_agg(event_id::text, ',') FROM queuebox_inserted) ELSE '' END);
    RETURN NULL;
END
$body$
$function$, '${queuebox_schema}', '${queuebox_table}_notify', channel);

    EXECUTE format('DROP TRIGGER IF EXISTS %1$I ON %2$I.%3$I',
            '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}');
    EXECUTE format('CREATE TRIGGER %1$I AFTER INSERT ON %2$I.%3$I REFERENCING NEW TABLE AS queuebox_inserted'
            || ' FOR EACH STATEMENT EXECUTE FUNCTION %2$I.%1$I()',
            '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}');
    IF enabled IS NULL OR enabled = 'D' THEN
        EXECUTE format('ALTER TABLE %2$I.%3$I DISABLE TRIGGER %1$I',
                '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}');
    ELSIF enabled <> 'O' THEN
        EXECUTE format('ALTER TABLE %2$I.%3$I ENABLE %4$s TRIGGER %1$I',
                '${queuebox_table}_notify', '${queuebox_schema}', '${queuebox_table}',
                CASE enabled WHEN 'A' THEN 'ALWAYS' ELSE 'REPLICA' END);
    END IF;
END
$queuebox$;
