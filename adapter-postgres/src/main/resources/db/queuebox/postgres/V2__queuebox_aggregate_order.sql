-- QueueBox outbox for PostgreSQL, version 2: the database keeps the write order of each aggregate.
-- Placeholders (Flyway syntax): ${queuebox_schema} and ${queuebox_table}; see docs/reference/postgres-schema.md.
-- Idempotent: the function is replaced, the trigger is created only when it is missing.
--
-- The rule it enforces, for every writer (QueueBox's writer, plain SQL, COPY): when an event of an aggregate
-- is committed, every event of that aggregate with a lower seq is committed or rolled back. Without it, a
-- transaction that inserted an earlier event of an aggregate and stays open lets a later event of the same
-- aggregate commit first and be delivered first (issue 11).
--
-- How: before each inserted row, a BEFORE ROW trigger takes a transaction-level advisory lock on the row's
-- aggregate and only then draws the row's seq. A second transaction writing the same aggregate waits at its
-- insert until the first one commits or rolls back, and draws its seq after that. Writers of other
-- aggregates never wait. The identity default has already drawn a value when a BEFORE trigger runs, so the
-- trigger draws again from the identity's own sequence and assigns it (seq values therefore have gaps; a
-- seq given with OVERRIDING SYSTEM VALUE is replaced as well).
--
-- The lock: pg_advisory_xact_lock(key1, key2), the two-integer form, with key1 the outbox table's oid (one
-- key space per outbox table) and key2 hashtext of the aggregate. The capture owner's session lock uses the
-- one-bigint form, which PostgreSQL keeps apart from the two-integer form (objsubid 1 and 2 in pg_locks),
-- so the two never meet. Two aggregates with the same 32-bit hash share a lock: they wait for each other,
-- never lose order. PostgresOutbox's writer computes the same key to take the locks of a batch in key
-- order before it inserts (EventWriter.AGGREGATE_LOCK_KEY; PostgresAggregateOrderTest checks they agree).
--
-- The sequence is resolved once, here, and written into the function: nextval of a constant regclass costs
-- nothing more per row, while looking it up per row (pg_get_serial_sequence) costs about 10 us.

DO $queuebox$
BEGIN
    EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.%2$I() RETURNS trigger
    LANGUAGE plpgsql AS $body$
DECLARE
    done text;
BEGIN
    -- An assignment rather than PERFORM: plpgsql evaluates it without starting a query (faster per row).
    done := pg_advisory_xact_lock(TG_RELID::integer,
            hashtext(length(NEW.aggregate_type)::text || ':' || NEW.aggregate_type || ':' || NEW.aggregate_id))::text;
    NEW.seq := nextval(%3$L::regclass);
    RETURN NEW;
END
$body$
$function$, '${queuebox_schema}', '${queuebox_table}_aggregate_lock',
        pg_get_serial_sequence(format('%I.%I', '${queuebox_schema}', '${queuebox_table}'), 'seq'));

    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = format('%I.%I', '${queuebox_schema}', '${queuebox_table}')::regclass
                   AND tgname = '${queuebox_table}_aggregate_lock') THEN
        EXECUTE format('CREATE TRIGGER %1$I BEFORE INSERT ON %2$I.%3$I FOR EACH ROW EXECUTE FUNCTION %2$I.%1$I()',
                '${queuebox_table}_aggregate_lock', '${queuebox_schema}', '${queuebox_table}');
    END IF;

    -- A row's place in its aggregate's order is fixed at insert: an UPDATE that moved a row into another
    -- aggregate, or gave it a new seq (SET seq = DEFAULT), would take no lock and could commit a later seq
    -- of an aggregate while an earlier one is still uncommitted. QueueBox never updates these columns.
    EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.%2$I() RETURNS trigger
    LANGUAGE plpgsql AS $body$
BEGIN
    IF NEW.aggregate_type IS DISTINCT FROM OLD.aggregate_type OR NEW.aggregate_id IS DISTINCT FROM OLD.aggregate_id
            OR NEW.seq IS DISTINCT FROM OLD.seq THEN
        RAISE EXCEPTION 'the aggregate_type, aggregate_id and seq of an outbox row cannot change (event %%):'
            ' they fix its place in its aggregate''s delivery order; insert a new event instead', OLD.event_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$body$
$function$, '${queuebox_schema}', '${queuebox_table}_order_fixed');

    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = format('%I.%I', '${queuebox_schema}', '${queuebox_table}')::regclass
                   AND tgname = '${queuebox_table}_order_fixed') THEN
        EXECUTE format('CREATE TRIGGER %1$I BEFORE UPDATE OF aggregate_type, aggregate_id, seq ON %2$I.%3$I'
                ' FOR EACH ROW EXECUTE FUNCTION %2$I.%1$I()',
                '${queuebox_table}_order_fixed', '${queuebox_schema}', '${queuebox_table}');
    END IF;

    -- ALWAYS: the triggers fire under session_replication_role = replica too (replication apply, restores
    -- and tools that set it to skip ordinary triggers), so no writer bypasses the order.
    EXECUTE format('ALTER TABLE %1$I.%2$I ENABLE ALWAYS TRIGGER %3$I', '${queuebox_schema}', '${queuebox_table}',
            '${queuebox_table}_aggregate_lock');
    EXECUTE format('ALTER TABLE %1$I.%2$I ENABLE ALWAYS TRIGGER %3$I', '${queuebox_schema}', '${queuebox_table}',
            '${queuebox_table}_order_fixed');
END
$queuebox$;
