package io.queuebox.postgres;

import java.util.Collections;

/**
 * Every statement of the store, rendered once for one table. Durations travel as microseconds and become
 * intervals in SQL, so all time arithmetic happens on the database clock.
 */
final class OutboxSql {

    /**
     * The most a row's headers may hold, uncompressed, for the claim to read them; a row with more is parked at claim,
     * saying so. More than any broker takes (Kafka's default request is 1 MiB in all, RabbitMQ's headers go in one
     * 128 KiB frame), and jsonb's text of it stays far from the 1 GB a text value may hold: a control character
     * takes six bytes there ({@code \u0001}), and text over 1 GB would fail the claim statement, and so every claim.
     */
    static final int HEADERS_MAX_BYTES = 1 << 20;

    /**
     * Columns of a row as deliveries and parked events need them. The headers as jsonb's text, read in the relay
     * ({@code HeaderColumn}): taking them apart here (two sorted {@code jsonb_each_text} arrays per row) cost the
     * database more per claimed row than locking it, about 7 microseconds. A stored value of at most 2 KiB holds at
     * most about 512 KiB uncompressed (pglz and lz4 compress at most about 250:1), under the bound, so only a larger
     * one is measured uncompressed ({@code headers || '{}'} makes an uncompressed copy; any jsonb takes it); over
     * {@link #HEADERS_MAX_BYTES} its text is not read at all.
     */
    private static final String HEADERS_SIZE = "pg_column_size(headers || '{}'::jsonb)";
    private static final String EVENT_COLUMNS = "seq, event_id, aggregate_type, aggregate_id, event_type, destination,"
            + " payload, content_type, created_at, attempts, last_error,"
            + " CASE WHEN pg_column_size(headers) <= 2048 OR " + HEADERS_SIZE + " <= " + HEADERS_MAX_BYTES
            + " THEN headers::text END AS headers,"
            + " CASE WHEN pg_column_size(headers) > 2048 THEN " + HEADERS_SIZE + " END AS headers_bytes";

    private static final String MICROS = " * interval '1 microsecond'";

    /**
     * Each row's aggregate as the columns' own collation tells them apart, for the relay's checks of an ordered claim
     * (parking at claim under HOLD_AGGREGATE, a chosen row another claimer took): under a nondeterministic collation
     * {@code ORDER-7} and {@code order-7} are one aggregate to the writers' lock and to every step of the claim, and
     * two to Java's String equality (PostgresNondeterministicCollationReviewTest). hashtextextended hashes what the
     * collation compares. Two aggregates whose hashes collide count as one there: the claim then leaves rows out for a
     * round, never lets one through.
     */
    private static final String AGGREGATE_KEYS = ", hashtextextended(r.aggregate_type, 0) AS aggregate_type_key,"
            + " hashtextextended(r.aggregate_id, 0) AS aggregate_id_key";

    /** Columns an ordered claim's rows have after {@link #EVENT_COLUMNS}: behind and the two aggregate keys. */
    static final int ORDERED_COLUMN_COUNT = 3;

    /** How many columns {@link #EVENT_COLUMNS} gives: the marker row of an ordered claim has as many. */
    static final int EVENT_COLUMN_COUNT = 13;

    /**
     * The last column of an ordered claim's rows, and the row it adds when it takes nothing although its window saw
     * due rows while rows are in flight (ClaimBatch heldElsewhere): the due rows were held back by their aggregates'
     * heads, or held by other claims. Without it the relay could not tell such a claim, which walked the head of
     * every aggregate for nothing, from an idle one. Due rows held back by parked heads or heads in backoff alone
     * do not count: nobody else's claim ends that, so polling less would only delay new rows. Only event_id tells
     * the marker from a row (it is never null in the table).
     */
    private static final String HELD_ELSEWHERE_COLUMN = ", false AS held_elsewhere";

    private static String heldElsewhereRow(String t, boolean held) {
        // Held, a row another claim locks is due like any other: there must also be one that is not, in the window or
        // past it (batches in flight may hold the whole window; the rows they hold come first in the walk).
        // A row an earlier round of this claim locked (:taken) was cut behind a sibling it could not lock. While an earlier
        // unsent sibling holds it back (held by another transaction, in backoff, or parked under HOLD_AGGREGATE), it
        // counts as due; when none does (the sibling was sent meanwhile, say), the row is claimable as soon as this claim
        // ends, and there is no marker.
        // Read as HELD, such rows were in flight or not by whether a transaction that began later had finished (this
        // transaction's own id is never in its snapshot's running list).
        String heldByOthers = "(" + HELD + " AND NOT %.event_id = ANY(:taken))";
        // The blocker as a scalar subquery in index order (PostgreSQL never makes one a join): NOT EXISTS may become an
        // anti-join that walks every unsent row.
        String freedAtEnd = "EXISTS (SELECT 1 FROM " + t + " p WHERE p.event_id = ANY(:taken) AND (SELECT 1"
                + " FROM " + t + " s WHERE s.aggregate_type = p.aggregate_type AND s.aggregate_id = p.aggregate_id"
                + " AND s.status <> 'sent' AND s.seq < p.seq AND (" + heldByOthers.replace("%", "s")
                + " OR (s.status = 'pending' AND " + READY_AT.replace("%", "s") + " > now()) OR (s.status = 'parked' AND :parkedHolds))"
                + " ORDER BY s.aggregate_type, s.aggregate_id, s.seq LIMIT 1) IS NULL)";
        String dueRow = "p.status = 'pending' AND " + READY_AT.replace("%", "p") + " <= now() AND ";
        String windowRow = dueRow + "p.seq <= (SELECT seq FROM window_end) AND ";
        String dueNotInFlight = held
                ? "EXISTS (SELECT 1 FROM " + t + " p WHERE " + dueRow + "NOT " + heldByOthers.replace("%", "p") + ")"
                : "(SELECT pending FROM window_end) > 0";
        String inFlight = held
                ? "EXISTS (SELECT 1 FROM " + t + " p WHERE " + windowRow + heldByOthers.replace("%", "p") + ")"
                : "EXISTS (SELECT 1 FROM " + t + " p WHERE p.lease_token IS NOT NULL AND p.status = 'pending'"
                + " AND p.lease_until > now())";
        // CASE, not AND: PostgreSQL orders the conditions of a WHERE by their estimated cost, and the lookups must not
        // run for a claim that took rows.
        return " UNION ALL SELECT " + String.join(", ", Collections.nCopies(EVENT_COLUMN_COUNT + ORDERED_COLUMN_COUNT, "NULL"))
                + ", true"
                + " WHERE CASE WHEN EXISTS (SELECT 1 FROM claimable) THEN false"
                + (held ? " WHEN " + freedAtEnd + " THEN false" : "") + " WHEN " + dueNotInFlight + " THEN " + inFlight
                + " ELSE false END";
    }

    /**
     * When a pending row becomes claimable on its own: its due time, or its lease expiry if later
     * ({@code greatest} ignores a null lease). Written exactly as the expression index
     * {@code <table>_pending_ready_idx} so the planner can use it; {@code %} stands for the table alias.
     */
    private static final String READY_AT = "greatest(%.next_attempt_at, %.lease_until)";

    /**
     * {@code status = 'pending'} for the statements that name their rows (by id, or by lease token), written so that it
     * does not imply the predicate of the partial indexes on pending rows. After analyze saw a table of sent rows (the
     * steady state of an outbox) those indexes look empty, and the planner walked every pending row to find the few
     * it was given instead of looking them up by key. {@code %} stands for the table alias.
     */
    private static final String STILL_PENDING = "(CASE WHEN %.status = 'pending' THEN true END)";

    private static final String NEXT_XID = "(SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint)";
    private static final String FULL_XMAX = "((" + NEXT_XID + " >> 32 << 32) | %.xmax::text::bigint)";
    private static final String FULL_XMAX_IN_EPOCH = "(CASE WHEN " + FULL_XMAX + " > " + NEXT_XID + " + 2147483648 THEN "
            + FULL_XMAX + " - 4294967296 ELSE " + FULL_XMAX + " END)";

    /**
     * Whether a row is held by the row lock (or update) of a transaction still in progress. A held claim writes
     * nothing on its rows, so this is how the table shows them: the row's {@code xmax} names a transaction that
     * is still running (a finished one's stays in {@code xmax}, committed or aborted). Running, by the current
     * snapshot: listed in it, or at or after its xmax (every transaction before that xmax has finished or is
     * listed). Rows carry 32-bit ids, snapshots 64-bit ones: the epoch is the snapshot's, one less for an id more
     * than 2^31 ahead of it, which can only be from before the last wrap. An {@code xmax} that is a multixact (two
     * share-lockers) is no transaction id at all; it counts as held only in the unlikely case that it falls within
     * a million ids after the snapshot's xmax. Taking a row for not held is always safe: the row lock itself,
     * taken with SKIP LOCKED, decides; this only keeps claims from choosing rows they cannot lock.
     */
    private static final String HELD = "COALESCE(%.xmax <> '0' AND (" + FULL_XMAX_IN_EPOCH + " BETWEEN " + NEXT_XID
            + " AND " + NEXT_XID + " + 1000000 OR " + FULL_XMAX_IN_EPOCH
            + " IN (SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) x)), false)";

    /**
     * The first key of the advisory lock that marks a held claim's transaction (two-key form, {@code objsubid = 2} in
     * {@code pg_locks}); the second key is the claim's lease in milliseconds. Taken shared and with "try", so that
     * claims never wait on each other or on anybody's lock of the same keys. Below 16384, the first oid PostgreSQL gives
     * a user's object, so never the first key of the aggregate lock (the outbox table's oid, V2).
     */
    static final int HELD_CLAIM_LOCK_KEY = 16383;

    /**
     * The first key of the session advisory lock that gives held ordered claims of every process their turn to choose
     * (the second is the table's oid): a choice locks nothing, so two claims of different relays that chose at once
     * chose the same rows, and the one that locked second lost them and chose again. Waited for under a lock_timeout
     * (a tenth of the lease at most), and released after the chosen rows are locked ({@code PostgresOutboxStore.Choice}).
     */
    static final int CHOICE_TURN_LOCK_KEY = 16382;

    /**
     * How long a held claim's transaction may go unanswered, local to it: the lease length ({@code :millis}). The idle
     * timeout ends the claim of a relay that stopped talking while the session waits for it; while PostgreSQL is still
     * sending it a result the session is not idle, and a relay frozen then (SIGSTOP, a stalled VM) keeps acknowledging
     * with a zero window. tcp_user_timeout bounds that too: the kernel gives up on data, or on a zero window, left
     * unacknowledged that long (Linux; ignored on a Unix socket). Keepalives from half the lease on (at least 1 s,
     * every second) let it also notice a relay that is gone while the session waits to read from it, in the middle of
     * a statement, where the idle timeout does not run: unanswered, they end the connection once nothing has come
     * from the relay for tcp_user_timeout. The advisory lock marks the transaction as a held claim with its lease,
     * for the other claims' {@link #ENDS_STALLED}.
     */
    private static final String HOLD_FOR = "set_config('idle_in_transaction_session_timeout', :millis, true)"
            + " || set_config('tcp_user_timeout', :millis, true)"
            + " || set_config('tcp_keepalives_idle', greatest(1, (:millis)::bigint / 2000)::text, true)"
            + " || set_config('tcp_keepalives_interval', '1', true)"
            + " || pg_try_advisory_xact_lock_shared(" + HELD_CLAIM_LOCK_KEY + ", (:millis)::int)::text";

    /**
     * {@link #HOLD_FOR} as a condition of the statement that takes a held claim's first locks, so that a claim needs
     * no statement of its own for it (an idle relay's empty claim stays one statement). An uncorrelated subquery runs
     * once, before the first row is locked (PostgreSQL 15 plans it as a one-time filter below the row locking).
     */
    private static final String HOLDS_FOR = "(SELECT " + HOLD_FOR + ") IS NOT NULL";

    /**
     * How many of its leases a held claim's statement may run while PostgreSQL, at that moment, is blocked sending it
     * rows (ClientWrite) before the other claims end it. state_change is the statement's start, so this counts the
     * statement's whole run, not the time blocked: a relay that reads slowly but steadily (a starved JVM on an
     * overloaded host) runs past one lease alive, and ending it made its rows be claimed and published again (the
     * scale-out bench with four relays on two cores: 3 sessions ended, 1,322 events delivered twice;
     * PostgresHeldClaimSlowReaderTest). A relay that stopped reading is ended by tcp_user_timeout after one lease
     * (Linux); this bounds it where the server ignores tcp_user_timeout. A stall in the middle of a statement's
     * messages (ClientRead) begins when the statement does, and is ended after one lease.
     */
    static final int STALLED_SENDING_LEASES = 10;

    /**
     * Ends the sessions of held claims that have waited on their relay in the middle of a statement for longer than
     * their own lease: active, waiting to read the rest of a statement (its Parse came, its Sync did not: a network
     * that failed mid-statement while something still acknowledges) or, for {@link #STALLED_SENDING_LEASES} leases
     * since the statement began, to send a result, in a transaction marked by {@link #HELD_CLAIM_LOCK_KEY}, whose
     * second key is that claim's lease; in this database only. Neither the idle timeout nor, with nothing left
     * unacknowledged, a TCP timeout ends such a session, and its rows are invisible to the claims that skip locked
     * rows: so every held claim looks, the empty claims of an idle relay too. Only sessions it may see and end: of
     * roles whose privileges this claim's role has, or any with pg_read_all_stats and pg_signal_backend
     * (relays that log in as one role and act as another need those); never a superuser's unless it is one. A claim
     * must never fail for it. pg_locks is read only for a session that matched the rest (a scalar subquery is
     * never made a join); pg_stat_activity costs about 25 microseconds with 100 connections.
     */
    private static final String ENDS_STALLED = "(SELECT count(pg_terminate_backend(a.pid)) FROM pg_stat_activity a"
            // A transaction reads pg_stat_activity's states once and keeps them, while wait events are read live: a
            // later round of a claim saw a session active since a lease ago, now idle in transaction and so waiting on
            // ClientRead, and ended it (PostgresHeldClaimStaleActivitySnapshotReviewTest). The one-time filter clears
            // the kept copy before the scan reads it.
            + " WHERE (SELECT pg_stat_clear_snapshot()::text) IS NOT NULL"
            + " AND a.state = 'active' AND a.wait_event_type = 'Client' AND a.backend_xid IS NOT NULL"
            // The marker is an advisory lock, which belongs to its database: elsewhere its keys may be anybody's.
            + " AND a.datname = current_database()"
            + " AND a.pid <> pg_backend_pid() AND (pg_has_role(a.usesysid, 'USAGE')"
            + " OR (pg_has_role('pg_signal_backend', 'USAGE') AND pg_has_role('pg_read_all_stats', 'USAGE')))"
            + " AND (NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.oid = a.usesysid)"
            + " OR (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user))"
            + " AND a.state_change < clock_timestamp() - (SELECT max(l.objid::text::bigint) FROM pg_locks l"
            + " WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.classid = " + HELD_CLAIM_LOCK_KEY
            + " AND l.objsubid = 2 AND l.granted) * interval '1 millisecond'"
            + " * CASE a.wait_event WHEN 'ClientRead' THEN 1 ELSE " + STALLED_SENDING_LEASES + " END) >= 0";

    /** {@link #HOLDS_FOR} and {@link #ENDS_STALLED}, for the held claim's statements that take rows. */
    private static final String HOLDS_FOR_AND_ENDS_STALLED = HOLDS_FOR + " AND " + ENDS_STALLED;

    final String claimOrdered;
    final String claimUnordered;
    final String chooseOrdered;
    final String lockChosen;
    final String lockChosenEndingTurn;
    final String lockUnordered;
    final String holdFor;
    final String tryChoiceTurn;
    final String takeChoiceTurn;
    final String endChoiceTurn;
    final String holdsChoiceTurn;
    /** The savepoint a held ordered claim takes its turn among processes in (PostgresOutboxStore.Choice). */
    static final String CHOICE_TURN_SAVEPOINT = "queuebox_choice_turn";
    final String releaseChoiceTurnSavepoint = "RELEASE SAVEPOINT " + CHOICE_TURN_SAVEPOINT;
    final String markSentHeld;
    final String deleteSentHeld;
    final String rescheduleHeld;
    final String parkHeld;
    final String markSent;
    final String deleteSent;
    final String reschedule;
    final String park;
    final String release;
    final String renew;
    final String timeUntilNextDue;
    final String purgeSent;
    final String stats;
    final String parkedCappedSelect;
    final String replay;

    OutboxSql(PostgresOutboxSettings settings) {
        String t = settings.qualifiedTable();
        claimOrdered = claim(t, true, false);
        claimUnordered = claim(t, false, false);
        chooseOrdered = claim(t, true, true);
        lockUnordered = claim(t, false, true);
        lockChosen = "SELECT o.event_id, o.attempts FROM " + t + " o WHERE o.event_id = ANY(:ids) AND "
                + STILL_PENDING.replace("%", "o") + " AND " + READY_AT.replace("%", "o") + " <= now() AND " + HOLDS_FOR_AND_ENDS_STALLED
                + " FOR UPDATE OF o SKIP LOCKED";
        holdFor = "SELECT " + HOLD_FOR;
        String turn = CHOICE_TURN_LOCK_KEY + ", '" + t.replace("'", "''") + "'::regclass::oid::integer";
        // The turn is the claim transaction's first statement (after the savepoint it is taken in): it sets the
        // transaction's timeouts first, so that a relay gone silent right after taking it loses it with its session
        // within the lease. It waits in the lock's
        // queue (first come, first served, no polling) for at most :waitMillis (lock_timeout: SQLSTATE 55P03 when it
        // runs out), then puts lock_timeout back as it was, for the statements of the batch that follow. Each CTE reads
        // the one before it, which fixes the order of the three. A statement_timeout of the session's below the wait
        // would cancel the statement instead (57014, which the claim must not take for a bound waited out): the wait
        // is then half of it.
        takeChoiceTurn = "WITH prior AS MATERIALIZED (SELECT current_setting('lock_timeout') AS lock_timeout,"
                + " extract(epoch FROM current_setting('statement_timeout')::interval) * 1000 AS statement_millis, "
                + HOLD_FOR + " AS holds),"
                + " bounded AS MATERIALIZED (SELECT set_config('lock_timeout', CASE WHEN prior.statement_millis > 0 THEN"
                + " least((:waitMillis)::bigint, greatest(1, (prior.statement_millis / 2)::bigint)) ELSE (:waitMillis)::bigint"
                + " END::text, true) AS waits FROM prior WHERE prior.holds IS NOT NULL),"
                + " turn AS MATERIALIZED (SELECT pg_advisory_lock(" + turn + ")::text AS taken FROM bounded)"
                + " SELECT set_config('lock_timeout', p.lock_timeout, true) IS NOT NULL FROM prior p, turn";
        // The turn when nobody holds it or waits for it, which is every claim of a relay that runs alone: one round
        // trip, no savepoint, no lock_timeout to set and put back. PostgreSQL grants a released lock to the first
        // claim in its queue, so a try never overtakes a waiting claim. Timeouts first, as above.
        tryChoiceTurn = "WITH prior AS MATERIALIZED (SELECT " + HOLD_FOR + " AS holds)"
                + " SELECT pg_try_advisory_lock(" + turn + ") FROM prior WHERE prior.holds IS NOT NULL";
        endChoiceTurn = "SELECT pg_advisory_unlock(" + turn + ")";
        // lockChosen, then the end of the turn, in one round trip: the turn ends once every chosen row is locked (the
        // count reads the locking CTE to its end first). A claim that locked nothing still gets one row back, its
        // columns null, so the end of the turn is seen.
        lockChosenEndingTurn = "WITH locked AS MATERIALIZED (" + lockChosen + "),"
                + " ended AS MATERIALIZED (SELECT pg_advisory_unlock(" + turn + ") AS ended FROM (SELECT count(*) FROM locked) n)"
                + " SELECT l.event_id, l.attempts FROM ended LEFT JOIN locked l ON ended.ended IS NOT NULL";
        // PostgreSQL may grant the lock as the lock_timeout fires and still fail the statement with it: a session lock
        // outlives the rollback, so the claim asks whether it holds the turn (setting the timeouts first, as above).
        holdsChoiceTurn = "SELECT CASE WHEN (SELECT " + HOLD_FOR + ") IS NOT NULL THEN EXISTS (SELECT 1 FROM pg_locks l"
                + " WHERE l.locktype = 'advisory' AND l.classid = " + CHOICE_TURN_LOCK_KEY + " AND l.objid = '"
                + t.replace("'", "''") + "'::regclass::oid AND l.objsubid = 2 AND l.pid = pg_backend_pid() AND l.granted) END";
        // The rows are locked by the held claim's own transaction: nobody else can have changed them. Each outcome
        // clears what an expired lease left on the row, so that the late outcome of a leased relay on the same
        // table (while the relays switch modes) finds its token gone and is fenced; on rows never leased the
        // columns are null already and the update stays as small as it was.
        String mine = " AND " + STILL_PENDING.replace("%.", "");
        String noLease = ", lease_token = NULL, lease_until = NULL";
        // The claim's transaction began when the batch was claimed, so now() is the claim's time: the outcome's
        // own time is clock_timestamp(), or a retry would count its delay from the claim, and purge a sent row early.
        markSentHeld = "UPDATE " + t + " SET status = 'sent', sent_at = clock_timestamp()" + noLease
                + " WHERE event_id = ANY(:ids)" + mine;
        deleteSentHeld = "DELETE FROM " + t + " WHERE event_id = ANY(:ids)" + mine;
        rescheduleHeld = "UPDATE " + t + " AS o SET attempts = o.attempts + 1, last_error = r.reason,"
                + " next_attempt_at = clock_timestamp() + r.delay_micros" + MICROS + noLease
                + " FROM unnest(:ids::uuid[], :delays::bigint[], :reasons::text[]) AS r(event_id, delay_micros, reason)"
                + " WHERE o.event_id = r.event_id AND " + STILL_PENDING.replace("%", "o");
        // Also for rows a claim chose but has not locked (parked at claim): another claimer's lock skips them.
        parkHeld = "UPDATE " + t + " AS o SET status = 'parked', attempts = o.attempts + 1, last_error = r.reason"
                + noLease
                + " FROM unnest(:ids::uuid[], :reasons::text[]) AS r(event_id, reason)"
                + " WHERE o.event_id = r.event_id AND " + STILL_PENDING.replace("%", "o") + " AND o.event_id IN (SELECT s.event_id FROM "
                + t + " s WHERE s.event_id = ANY(:ids) AND " + STILL_PENDING.replace("%", "s") + " FOR UPDATE SKIP LOCKED)"
                + " RETURNING o.event_id";
        markSent = "UPDATE " + t + " SET status = 'sent', sent_at = now(), lease_token = NULL, lease_until = NULL"
                + " WHERE lease_token = :token" + mine + " AND event_id = ANY(:ids)";
        deleteSent = "DELETE FROM " + t + " WHERE lease_token = :token" + mine + " AND event_id = ANY(:ids)";
        reschedule = "UPDATE " + t + " AS o SET attempts = o.attempts + 1, last_error = r.reason,"
                + " next_attempt_at = now() + r.delay_micros" + MICROS + ", lease_token = NULL, lease_until = NULL"
                + " FROM unnest(:ids::uuid[], :delays::bigint[], :reasons::text[]) AS r(event_id, delay_micros, reason)"
                + " WHERE o.event_id = r.event_id AND o.lease_token = :token AND " + STILL_PENDING.replace("%", "o");
        park = "UPDATE " + t + " AS o SET status = 'parked', attempts = o.attempts + 1, last_error = r.reason,"
                + " lease_token = NULL, lease_until = NULL"
                + " FROM unnest(:ids::uuid[], :reasons::text[]) AS r(event_id, reason)"
                + " WHERE o.event_id = r.event_id AND o.lease_token = :token AND " + STILL_PENDING.replace("%", "o");
        release = "UPDATE " + t + " SET lease_token = NULL, lease_until = NULL"
                + " WHERE lease_token = :token" + mine + " AND event_id = ANY(:ids)";
        renew = "UPDATE " + t + " SET lease_until = now() + :leaseMicros" + MICROS
                + " WHERE lease_token = :token" + mine;
        // The earliest first, in the order of <table>_pending_ready_idx, rather than min(): with statistics that say
        // nothing is pending the planner read every pending row for min().
        timeUntilNextDue = "SELECT (extract(epoch FROM (SELECT " + READY_AT.replace("%", "o") + " FROM " + t + " o"
                + " WHERE o.status = 'pending' AND NOT " + HELD.replace("%", "o") + " ORDER BY " + READY_AT.replace("%", "o")
                + " LIMIT 1) - now()) * 1000000)::bigint AS micros";
        purgeSent = "DELETE FROM " + t + " WHERE event_id IN (SELECT event_id FROM " + t
                + " WHERE status = 'sent' AND sent_at < now() - :retentionMicros" + MICROS
                + " ORDER BY sent_at LIMIT :maxRows FOR UPDATE SKIP LOCKED)";
        stats = "SELECT count(*) FILTER (WHERE status = 'pending') AS pending,"
                + " count(*) FILTER (WHERE status = 'pending' AND (lease_until > now() OR " + HELD.replace("%", "o")
                + ")) AS leased,"
                + " count(*) FILTER (WHERE status = 'parked') AS parked,"
                + " (extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending')) * 1000000)::bigint"
                + " AS oldest_micros FROM " + t + " o WHERE status <> 'sent'";
        // The payload cut in the database, so a list of rows parked for their size does not carry them whole;
        // octet_length of a bytea is read from its header (toasted values are not fetched for it).
        parkedCappedSelect = "SELECT " + EVENT_COLUMNS.replace(" payload,",
                        " substring(payload from 1 for :maxPayloadBytes) AS payload, octet_length(payload) AS payload_bytes,")
                + " FROM " + t + " WHERE status = 'parked' AND <selector> ORDER BY seq LIMIT :limit";
        replay = "UPDATE " + t + " SET status = 'pending', next_attempt_at = now(), attempts = 0,"
                + " lease_token = NULL, lease_until = NULL WHERE status = 'parked' AND <selector>";
    }

    /**
     * The claim, one statement. Ordered, it looks for claimable rows in two places and keeps what the
     * in-batch rule and concurrent claimers allow:
     * <ul>
     *   <li>{@code near}: the pending rows up to the {@code :window}-th ready one in sequence order (rows in
     *       flight or in backoff do not use up the window), locked (skipping rows
     *       another claimer is locking right now) when ready (due, no live lease) and not held back by an
     *       earlier row of their aggregate (an earlier pending row that is not ready, or a parked one under
     *       HOLD_AGGREGATE). The window bounds this walk: the tail of an aggregate whose head is leased, in
     *       backoff or parked is never walked further than the window.</li>
     *   <li>{@code far}, only when {@code near} found less than a batch among a full window of ready rows,
     *       so the window is mostly ready rows held back by their aggregate's head: the heads
     *       of the aggregates (their first unsent row), one index descent per aggregate through the
     *       {@code (aggregate_type, aggregate_id, seq)} index, and for the ready heads beyond the window the
     *       ready rows that follow them, up to the first row that holds the aggregate back. Its cost follows
     *       the number of aggregates, never the length of a blocked aggregate's tail.</li>
     * </ul>
     * A skipped row is invisible to the held-back check, so {@code gaps} finds, per aggregate, the first
     * earlier unsent row that is not among the locked candidates, and {@code claimable} keeps only the rows
     * before it: the in-batch rule, and the guard that a later row is never claimed while a concurrent
     * claimer holds its earlier sibling.
     */
    private static String claim(String t, boolean ordered, boolean held) {
        // The lease runs from when the rows are written, not from the statement's start: a slow claim does
        // not hand out leases that are already partly spent. A held claim writes nothing: its row locks,
        // kept by its open transaction, are the claim; rows an earlier round of the same transaction locked
        // (:taken) are not taken again, since a transaction's own locks do not make it skip a row.
        // Ordered, each row also says whether the next unsent row of its aggregate stays behind, outside the batch:
        // the batch holds it back, and the relay looks again once the batch's outcome is written (ClaimBatch
        // holdsBack). Only for a batch short of maxRows: after a full one the relay claims again anyway.
        String behind = !ordered ? "" : ", COALESCE(CASE WHEN (SELECT count(*) FROM claimable) < :maxRows THEN"
                + " (SELECT n.event_id FROM " + t + " n WHERE n.aggregate_type = r.aggregate_type"
                + " AND n.aggregate_id = r.aggregate_id AND n.status <> 'sent' AND n.seq > r.seq"
                + " ORDER BY n.aggregate_type, n.aggregate_id, n.seq LIMIT 1) NOT IN (SELECT c.event_id FROM claimable c)"
                + " END, false) AS behind" + AGGREGATE_KEYS;
        // The held choice locks nothing, yet an idle ordered relay's claim is only this statement: it too ends stalled
        // claims (a one-time filter, evaluated once before the rest).
        String marker = ordered ? HELD_ELSEWHERE_COLUMN : "";
        String markerRow = ordered ? heldElsewhereRow(t, held) : "";
        String claimed = held
                ? " SELECT " + EVENT_COLUMNS + behind + marker + " FROM " + t + " r WHERE r.event_id IN (SELECT c.event_id FROM claimable c)"
                + " AND " + ENDS_STALLED + markerRow + " ORDER BY seq"
                : " claimed AS (UPDATE " + t + " AS u SET lease_owner = :owner, lease_token = :token,"
                + " lease_until = clock_timestamp() + :leaseMicros" + MICROS
                + " FROM claimable WHERE u.event_id = claimable.event_id RETURNING u.*)"
                + " SELECT " + EVENT_COLUMNS + behind + marker + " FROM claimed r" + markerRow + " ORDER BY seq";
        String notTaken = held ? " AND NOT (o.event_id = ANY(:taken))" : "";
        // Read by the statement that locks them: PostgreSQL returns a row it locks as it is once locked (a row
        // changed since the statement's snapshot is read again, and checked again, at its latest version).
        if (!ordered && held) {
            return "SELECT " + EVENT_COLUMNS + " FROM " + t + " o WHERE o.status = 'pending' AND " + READY_AT.replace("%", "o")
                    + " <= now()" + notTaken + " AND " + HOLDS_FOR_AND_ENDS_STALLED + " ORDER BY o.seq LIMIT :maxRows FOR UPDATE OF o SKIP LOCKED";
        }
        if (!ordered) {
            return "WITH candidates AS MATERIALIZED (SELECT o.event_id FROM " + t + " o"
                    + " WHERE o.status = 'pending' AND " + READY_AT.replace("%", "o") + " <= now()" + notTaken
                    + " ORDER BY o.seq LIMIT :maxRows FOR UPDATE OF o SKIP LOCKED),"
                    + " claimable AS (SELECT c.event_id FROM candidates c)," + claimed;
        }
        // Held, the choice locks nothing: the rows it would lock and then leave out (held back by a sibling
        // another claimer holds) would stay locked for the whole claim. It leaves out the rows that running
        // transactions hold instead, and lockChosen locks what it chose.
        String lockOrSkipHeld = held ? "" : " FOR UPDATE OF o SKIP LOCKED";
        // This transaction's own id is never in its snapshot's running list: once a later transaction has
        // finished, the rows its earlier rounds locked look free to it. Those rows (:taken) count as held too.
        String heldOrTaken = "(" + HELD + " OR %.event_id = ANY(:taken))";
        String notHeld = held ? " AND NOT " + heldOrTaken.replace("%", "o") : "";
        // A row a running transaction holds is in flight, like a leased one: it holds back its later siblings.
        String heldToo = held ? " OR " + heldOrTaken : "";
        String holds = "(%.status = 'pending' OR :parkedHolds)";
        // Held, the window's rows are kept with what the walk of the near part needs (win, below).
        String windowEnd = held
                ? "win AS MATERIALIZED (SELECT p.event_id, p.seq, p.aggregate_type, p.aggregate_id, "
                + heldOrTaken.replace("%", "p") + " AS blocked FROM " + t + " p WHERE p.status = 'pending' AND "
                + READY_AT.replace("%", "p") + " <= now() ORDER BY p.seq LIMIT :window),"
                + " window_end AS MATERIALIZED (SELECT max(w.seq) AS seq, count(*) AS pending FROM win w)"
                : "window_end AS MATERIALIZED (SELECT max(w.seq) AS seq, count(*) AS pending FROM"
                + " (SELECT p.seq FROM " + t + " p WHERE p.status = 'pending' AND " + READY_AT.replace("%", "p")
                + " <= now() ORDER BY p.seq LIMIT :window) w)";
        // Whether the head of the candidate's aggregate holds it back: its first unsent row that can (pending, or
        // parked under HOLD_AGGREGATE), when that comes before the candidate and is not ready. Only the head: rows
        // behind a ready head and a later sibling that is not ready (in backoff or leased behind a replayed head, or
        // taken right now by another claimer) pass here, and gaps drops them: the batch may then come back short, and
        // says it holds rows back (behind), so the relay claims again once its outcome is written. A scalar subquery, which PostgreSQL never turns into a join, ordered as the
        // (aggregate_type, aggregate_id, seq) index with LIMIT 1: one index descent per candidate whatever the
        // statistics say. Written as NOT EXISTS over every earlier sibling, the planner made it an anti-join that
        // walked every unsent row per candidate when analyze had seen a table of sent rows (6 s for one claim with
        // 30,000 pending), and kept as a subplan, a sequential scan per candidate when the backlog spans a few
        // aggregates; and it walked all earlier siblings of a hot aggregate for each candidate.
        // The lookup also keeps the head's seq (head_seq): a candidate that is its aggregate's head and its only
        // candidate has no earlier row to miss, so gaps need not look (in a drain over many aggregates, every one).
        // A lateral subquery with LIMIT is never flattened either: still one descent per candidate.
        String head = " LEFT JOIN LATERAL (SELECT h.seq AS head_seq, h.seq < o.seq AND ((h.status = 'pending' AND ("
                + READY_AT.replace("%", "h") + " > now()" + heldToo.replace("%", "h") + ")) OR h.status = 'parked') AS holds"
                + " FROM " + t + " h"
                + " WHERE h.aggregate_type = o.aggregate_type AND h.aggregate_id = o.aggregate_id AND h.status <> 'sent'"
                + " AND " + holds.replace("%", "h") + " ORDER BY h.aggregate_type, h.aggregate_id, h.seq LIMIT 1) hd ON true";
        String lookedUp = "SELECT o.event_id, o.seq, o.aggregate_type, o.aggregate_id, hd.head_seq, false AS proven FROM "
                + t + " o" + head
                + " WHERE o.status = 'pending' AND " + READY_AT.replace("%", "o") + " <= now()"
                + " AND o.seq <= (SELECT seq FROM window_end)" + notHeld
                + " AND NOT COALESCE(hd.holds, false)";
        String near;
        if (held) {
            // The window's own rows, with what holds each back, in one walk: a held claim writes nothing, so within the
            // window every row that can hold a later sibling back is either a window row (held by a running transaction,
            // or taken by an earlier round) or one of the few known outside it (outside). When those are known in full
            // (exact), a window row is claimable when no such row of its aggregate comes before it: no lookup per row.
            // Otherwise (many rows in backoff or parked), each candidate looks up its aggregate's head as before.
            // Every unsent row before the window's end that holds its aggregate back and is not a window row: pending ones
            // that are not ready (in backoff: a ready pending row before the window's end is a window row), and parked
            // ones under HOLD_AGGREGATE. Each list stops one row past OUTSIDE_EXACT_LIMIT, which then says it is not
            // complete. Rows in backoff are not limited to before the window's end, so that the walk stays bounded.
            String readPastLimit = " LIMIT " + (OUTSIDE_EXACT_LIMIT + 1);
            String outside = "outside AS MATERIALIZED (SELECT 1 AS source, b.seq, b.aggregate_type, b.aggregate_id FROM (SELECT"
                    + " x.seq, x.aggregate_type, x.aggregate_id FROM " + t + " x WHERE x.status = 'pending' AND "
                    + READY_AT.replace("%", "x") + " > now()" + readPastLimit + ") b"
                    + " UNION ALL SELECT 2, b.seq, b.aggregate_type, b.aggregate_id FROM (SELECT x.seq, x.aggregate_type,"
                    + " x.aggregate_id FROM " + t + " x WHERE x.status = 'parked' AND :parkedHolds"
                    + " AND x.seq < (SELECT seq FROM window_end) ORDER BY x.seq" + readPastLimit + ") b)";
            String exact = "exact AS MATERIALIZED (SELECT count(*) FILTER (WHERE source = 1) <= " + OUTSIDE_EXACT_LIMIT
                    + " AND count(*) FILTER (WHERE source = 2) <= " + OUTSIDE_EXACT_LIMIT + " AS yes FROM outside)";
            // The window's rows no earlier row of their aggregate holds back, when outside is complete (exact).
            near = outside + ", " + exact + ", near AS MATERIALIZED (SELECT * FROM (" + HELD_WALK + " ORDER BY m.seq LIMIT :maxRows) a"
                    + " UNION ALL SELECT * FROM (" + lookedUp + " AND NOT (SELECT yes FROM exact) ORDER BY o.seq LIMIT :maxRows) b)";
        } else {
            near = "near AS MATERIALIZED (" + lookedUp + " ORDER BY o.seq LIMIT :maxRows" + lockOrSkipHeld + ")";
        }
        String needFar = "need_far AS MATERIALIZED (SELECT (SELECT count(*) FROM near) < :maxRows"
                + " AND (SELECT pending FROM window_end) >= :window AS yes)";
        String headRow = "SELECT h.aggregate_type, h.aggregate_id, h.seq, h.status, "
                + (held ? heldOrTaken.replace("%", "h") : "false") + " AS held, " + READY_AT.replace("%", "h")
                + " AS ready_at FROM " + t + " h WHERE h.status <> 'sent' AND " + holds.replace("%", "h");
        String heads = "heads AS (SELECT * FROM (" + headRow + " AND (SELECT yes FROM need_far)"
                + " ORDER BY h.aggregate_type, h.aggregate_id, h.seq LIMIT 1) first_head"
                + " UNION ALL SELECT n.* FROM heads p CROSS JOIN LATERAL (" + headRow
                + " AND (h.aggregate_type, h.aggregate_id) > (p.aggregate_type, p.aggregate_id)"
                + " ORDER BY h.aggregate_type, h.aggregate_id, h.seq LIMIT 1) n)";
        String farHeads = "far_heads AS MATERIALIZED (SELECT h.aggregate_type, h.aggregate_id, h.seq FROM heads h"
                + " WHERE h.seq > (SELECT seq FROM window_end) AND h.status = 'pending' AND h.ready_at <= now()"
                + " AND NOT h.held ORDER BY h.seq LIMIT :maxRows)";
        String farRows = "far_rows AS (SELECT r.event_id, r.status, bool_or(NOT r.passable) OVER"
                + " (PARTITION BY r.aggregate_type, r.aggregate_id ORDER BY r.seq) AS cut FROM far_heads f"
                + " CROSS JOIN LATERAL (SELECT e.event_id, e.seq, e.aggregate_type, e.aggregate_id, e.status,"
                + " (e.status = 'pending' AND " + READY_AT.replace("%", "e") + " <= now()" + (held ? " AND NOT " + heldOrTaken.replace("%", "e") : "")
                + ") OR (e.status = 'parked' AND NOT :parkedHolds) AS passable FROM " + t + " e"
                + " WHERE e.aggregate_type = f.aggregate_type AND e.aggregate_id = f.aggregate_id"
                + " AND e.status <> 'sent' AND e.seq >= f.seq ORDER BY e.seq"
                + " LIMIT (SELECT greatest(1, :maxRows / greatest(1, count(*))) FROM far_heads)) r)";
        // Gated by need_far itself: with nothing to look up, the planner may still walk every pending row for the
        // empty id list when the statistics say there are none.
        String far = "far AS MATERIALIZED (SELECT o.event_id, o.seq, o.aggregate_type, o.aggregate_id, NULL::bigint AS head_seq,"
                + " false AS proven"
                + " FROM " + t + " o"
                + " WHERE o.event_id = ANY (ARRAY(SELECT f.event_id FROM far_rows f"
                + " WHERE NOT f.cut AND f.status = 'pending'))"
                + " AND (SELECT yes FROM need_far) AND o.status = 'pending' AND " + READY_AT.replace("%", "o") + " <= now()" + notHeld
                + " ORDER BY o.seq LIMIT :maxRows" + lockOrSkipHeld + ")";
        String candidates = "candidates AS MATERIALIZED (SELECT * FROM (SELECT * FROM near UNION ALL SELECT * FROM far) c"
                + " ORDER BY c.seq LIMIT :maxRows)";
        // The head is the first row that would count as a gap (the same predicate): an aggregate whose only
        // candidate is its head has none, and is not looked up.
        // Each aggregate's candidates travel with its gap, so claimable needs no join back to candidates: a prepared
        // claim is planned generically, usually on a near-empty outbox, and the planner then joined the two steps in a
        // nested loop, every candidate against every aggregate (30 of 35 ms of a 500-row claim).
        // Rows proven by the window's walk (held claims) need no look: they go straight to claimable.
        String gaps = "gaps AS MATERIALIZED (SELECT a.event_ids, a.seqs, CASE WHEN a.n_rows = 1"
                + " AND a.last_seq = a.head_seq THEN NULL ELSE (SELECT min(e.seq) FROM " + t + " e"
                + " WHERE e.aggregate_type = a.aggregate_type AND e.aggregate_id = a.aggregate_id"
                + " AND e.seq < a.last_seq AND e.status <> 'sent'"
                + " AND " + holds.replace("%", "e")
                + " AND e.event_id NOT IN (SELECT x.event_id FROM candidates x)) END AS first_gap"
                + " FROM (SELECT aggregate_type, aggregate_id, max(seq) AS last_seq, count(*) AS n_rows,"
                + " min(head_seq) AS head_seq, array_agg(event_id) AS event_ids, array_agg(seq) AS seqs"
                + " FROM candidates WHERE NOT proven GROUP BY aggregate_type, aggregate_id) a)";
        String claimable = "claimable AS (SELECT p.event_id, p.seq FROM candidates p WHERE p.proven"
                + " UNION ALL SELECT k.event_id, k.seq FROM gaps g"
                + " CROSS JOIN LATERAL unnest(g.event_ids, g.seqs) AS k(event_id, seq)"
                + " WHERE g.first_gap IS NULL OR k.seq < g.first_gap)";
        return "WITH RECURSIVE " + String.join(", ", windowEnd, near, needFar, heads, farHeads, farRows, far,
                candidates, gaps, claimable) + (held ? "" : ",") + claimed;
    }

    /**
     * The window walk of a held ordered claim, which needs no lookup per row (see {@code claim}).
     *
     * <p>A row is cut when a blocked row of its aggregate comes before it (or is it). Claimable rows are then closed
     * under "every earlier unsent sibling": the first :maxRows by seq carry their earlier siblings with them, so
     * gaps need not look them up (proven). Each aggregate's first blocked row is found by grouping the blocked
     * rows alone and joining the window to them: a window function partitioned by aggregate sorted all the
     * window's rows by their text keys, and took a third of the statement (2.4 of 7.1 ms for a window of 2,000).
     * Grouped and joined under the columns' own collation, as the writers' lock, the head lookups and gaps compare
     * aggregates: under COLLATE "C" a case-insensitive column's ORDER-7 and order-7 were two aggregates here and
     * one everywhere else (PostgresNondeterministicCollationReviewTest). Both columns are NOT NULL, so the join's
     * equality misses no aggregate.
     */
    static final String HELD_WALK = "SELECT m.event_id, m.seq, m.aggregate_type, m.aggregate_id, NULL::bigint AS head_seq, true AS proven"
            + " FROM win m LEFT JOIN (SELECT x.aggregate_type, x.aggregate_id, min(x.seq) AS first_blocked"
            + " FROM (SELECT w.seq, w.aggregate_type, w.aggregate_id FROM win w WHERE w.blocked"
            + " UNION ALL SELECT o.seq, o.aggregate_type, o.aggregate_id FROM outside o) x"
            + " GROUP BY x.aggregate_type, x.aggregate_id) fb"
            + " ON fb.aggregate_type = m.aggregate_type AND fb.aggregate_id = m.aggregate_id"
            + " WHERE (fb.first_blocked IS NULL OR m.seq < fb.first_blocked) AND (SELECT yes FROM exact)";

    /**
     * How many rows in backoff, and how many parked rows under HOLD_AGGREGATE, a held ordered claim reads to tell
     * the window's claimable rows without a lookup per row; with more of either it looks each candidate's head up.
     */
    static final int OUTSIDE_EXACT_LIMIT = 1000;

    /** How many pending rows the near part of an ordered claim looks at: a few batches' worth. */
    static int claimWindow(int maxRows) {
        return Math.max(100, 4 * maxRows);
    }
}
