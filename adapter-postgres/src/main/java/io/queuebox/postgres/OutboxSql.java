package io.queuebox.postgres;

/**
 * Every statement of the store, rendered once for one table. Durations travel as microseconds and become
 * intervals in SQL, so all time arithmetic happens on the database clock.
 */
final class OutboxSql {

    /** Columns of a row as deliveries and parked events need them; headers come back as two aligned arrays. */
    private static final String EVENT_COLUMNS = "seq, event_id, aggregate_type, aggregate_id, event_type, destination,"
            + " payload, content_type, created_at, attempts, last_error,"
            + " ARRAY(SELECT h.key FROM jsonb_each_text(headers) h ORDER BY h.key) AS header_names,"
            + " ARRAY(SELECT h.value FROM jsonb_each_text(headers) h ORDER BY h.key) AS header_values";

    private static final String MICROS = " * interval '1 microsecond'";

    final String claimOrdered;
    final String claimUnordered;
    final String markSent;
    final String deleteSent;
    final String reschedule;
    final String park;
    final String release;
    final String renew;
    final String timeUntilNextDue;
    final String purgeSent;
    final String stats;
    final String parkedSelect;
    final String replay;

    OutboxSql(PostgresOutboxSettings settings) {
        String t = settings.qualifiedTable();
        claimOrdered = claim(t, true);
        claimUnordered = claim(t, false);
        markSent = "UPDATE " + t + " SET status = 'sent', sent_at = now(), lease_token = NULL, lease_until = NULL"
                + " WHERE lease_token = :token AND status = 'pending' AND event_id = ANY(:ids)";
        deleteSent = "DELETE FROM " + t + " WHERE lease_token = :token AND status = 'pending' AND event_id = ANY(:ids)";
        reschedule = "UPDATE " + t + " AS o SET attempts = o.attempts + 1, last_error = r.reason,"
                + " next_attempt_at = now() + r.delay_micros" + MICROS + ", lease_token = NULL, lease_until = NULL"
                + " FROM unnest(:ids::uuid[], :delays::bigint[], :reasons::text[]) AS r(event_id, delay_micros, reason)"
                + " WHERE o.event_id = r.event_id AND o.lease_token = :token AND o.status = 'pending'";
        park = "UPDATE " + t + " AS o SET status = 'parked', attempts = o.attempts + 1, last_error = r.reason,"
                + " lease_token = NULL, lease_until = NULL"
                + " FROM unnest(:ids::uuid[], :reasons::text[]) AS r(event_id, reason)"
                + " WHERE o.event_id = r.event_id AND o.lease_token = :token AND o.status = 'pending'";
        release = "UPDATE " + t + " SET lease_token = NULL, lease_until = NULL"
                + " WHERE lease_token = :token AND status = 'pending' AND event_id = ANY(:ids)";
        renew = "UPDATE " + t + " SET lease_until = now() + :leaseMicros" + MICROS
                + " WHERE lease_token = :token AND status = 'pending'";
        // When each pending row becomes claimable on its own: its due time, or its lease expiry if later.
        timeUntilNextDue = "SELECT (extract(epoch FROM min(greatest(next_attempt_at, coalesce(lease_until, next_attempt_at)))"
                + " - now()) * 1000000)::bigint AS micros, count(*) AS pending FROM " + t + " WHERE status = 'pending'";
        purgeSent = "DELETE FROM " + t + " WHERE event_id IN (SELECT event_id FROM " + t
                + " WHERE status = 'sent' AND sent_at < now() - :retentionMicros" + MICROS
                + " ORDER BY sent_at LIMIT :maxRows FOR UPDATE SKIP LOCKED)";
        stats = "SELECT count(*) FILTER (WHERE status = 'pending') AS pending,"
                + " count(*) FILTER (WHERE status = 'pending' AND lease_until > now()) AS leased,"
                + " count(*) FILTER (WHERE status = 'parked') AS parked,"
                + " (extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending')) * 1000000)::bigint"
                + " AS oldest_micros FROM " + t + " WHERE status <> 'sent'";
        parkedSelect = "SELECT " + EVENT_COLUMNS + " FROM " + t + " WHERE status = 'parked' AND <selector>"
                + " ORDER BY seq LIMIT :limit";
        replay = "UPDATE " + t + " SET status = 'pending', next_attempt_at = now(), attempts = 0,"
                + " lease_token = NULL, lease_until = NULL WHERE status = 'parked' AND <selector>";
    }

    /**
     * The claim, one statement. {@code candidates} locks, in sequence order, pending due unleased rows that
     * no earlier row of their aggregate holds back (an earlier pending row that is not claimable, or a parked
     * one under HOLD_AGGREGATE), skipping rows another claimer is locking right now. A skipped row is
     * invisible to the ordering check of the first step, so {@code claimable} then keeps only rows whose every
     * earlier unsent sibling is itself among the locked candidates: the in-batch rule, and the guard that an
     * aggregate's later row is never claimed while a concurrent claimer holds its earlier one.
     */
    private static String claim(String t, boolean ordered) {
        String claimableAlone = "o.status = 'pending' AND o.next_attempt_at <= now()"
                + " AND (o.lease_until IS NULL OR o.lease_until <= now())";
        String notHeldBack = " AND NOT EXISTS (SELECT 1 FROM " + t + " e"
                + " WHERE e.aggregate_type = o.aggregate_type AND e.aggregate_id = o.aggregate_id AND e.seq < o.seq"
                + " AND ((e.status = 'pending' AND (e.next_attempt_at > now() OR e.lease_until > now()))"
                + " OR (e.status = 'parked' AND :parkedHolds)))";
        String candidates = "SELECT o.event_id, o.seq, o.aggregate_type, o.aggregate_id FROM " + t + " o"
                + " WHERE " + claimableAlone + (ordered ? notHeldBack : "")
                + " ORDER BY o.seq LIMIT :maxRows FOR UPDATE OF o SKIP LOCKED";
        String claimable = ordered
                ? "SELECT c.event_id FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM " + t + " e"
                        + " WHERE e.aggregate_type = c.aggregate_type AND e.aggregate_id = c.aggregate_id"
                        + " AND e.seq < c.seq AND (e.status = 'pending' OR (e.status = 'parked' AND :parkedHolds))"
                        + " AND NOT EXISTS (SELECT 1 FROM candidates x WHERE x.event_id = e.event_id))"
                : "SELECT c.event_id FROM candidates c";
        return "WITH candidates AS MATERIALIZED (" + candidates + "),"
                + " claimable AS (" + claimable + "),"
                + " claimed AS (UPDATE " + t + " AS u SET lease_owner = :owner, lease_token = :token,"
                + " lease_until = now() + :leaseMicros" + MICROS
                + " FROM claimable WHERE u.event_id = claimable.event_id RETURNING u.*)"
                + " SELECT " + EVENT_COLUMNS + " FROM claimed ORDER BY seq";
    }
}
