package io.queuebox.sqlserver;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every SQL statement of the SQL Server adapter, in one place, as templates: {@code {table}} stands for the
 * bracket-quoted outbox table, {@code {captureState}} for the capture state table, and {@code {rows}} (the
 * insert only) for the writer's row list. Parameters are Jdbi named parameters ({@code :name}); the writer
 * and the lock run on plain JDBC with {@code ?}.
 *
 * <p>All time arithmetic happens on the database clock, {@code SYSUTCDATETIME()}, with {@code datetime2}
 * columns holding UTC. Durations travel as whole seconds plus microseconds because {@code DATEADD} takes an
 * {@code int}.
 */
enum SqlServerStatements {

    /** The writer's multi-row insert; {@code ORDER BY} makes the identity follow the list order. */
    INSERT_EVENTS(Group.WRITER, "INSERT INTO {table} (event_id, aggregate_type, aggregate_id, event_type,"
            + " destination, payload, content_type, headers)"
            + " SELECT v.event_id, v.aggregate_type, v.aggregate_id, v.event_type, v.destination, v.payload,"
            + " v.content_type, v.headers"
            + " FROM (VALUES {rows}) AS v(event_id, aggregate_type, aggregate_id, event_type, destination, payload,"
            + " content_type, headers, position)"
            + " ORDER BY v.position"),

    /**
     * The per-aggregate claim, one batch in one round trip and one transaction. Candidates are locked with
     * {@code UPDLOCK, ROWLOCK, READPAST} in sequence order: pending, ready (due and not under a live
     * lease), and not held back by an earlier row of their aggregate. A skipped (locked) row is invisible
     * to that check, so the gaps step then drops every candidate that has an earlier unsent row of its
     * aggregate outside the candidates (pending in any state, or parked under HOLD_AGGREGATE): a later row
     * is never claimed while its earlier sibling is locked by another claimer or not claimable. The sibling
     * checks read {@code WITH (NOLOCK)} on purpose: they must see rows that others lock or are inserting,
     * without waiting for those transactions, and every dirty value they can see only holds rows back.
     * The table variable materialises the candidates once; the transaction keeps their update locks until
     * the leases are written and returned through {@code OUTPUT}.
     */
    CLAIM_ORDERED(Group.STORE, "SET NOCOUNT ON; SET XACT_ABORT ON;"
            + " DECLARE @maxRows int = :maxRows, @owner nvarchar(255) = :owner, @token uniqueidentifier = :token,"
            + " @leaseSeconds int = :leaseSeconds, @leaseMicros int = :leaseMicros, @parkedHolds bit = :parkedHolds;"
            + " DECLARE @now datetime2(7) = SYSUTCDATETIME();"
            + " DECLARE @candidates TABLE (event_id uniqueidentifier NOT NULL PRIMARY KEY, seq bigint NOT NULL,"
            + " aggregate_type nvarchar(255) NOT NULL, aggregate_id nvarchar(255) NOT NULL);"
            + " BEGIN TRANSACTION;"
            + Ordered.CANDIDATES
            + " ORDER BY o.seq;"
            + Ordered.GAPS
            + " UPDATE u SET lease_owner = @owner, lease_token = @token,"
            + " lease_until = DATEADD(microsecond, @leaseMicros, DATEADD(second, @leaseSeconds, @now))"
            + " OUTPUT " + Columns.inserted()
            + " FROM @candidates c JOIN {table} u WITH (FORCESEEK) ON u.event_id = c.event_id;"
            + " COMMIT TRANSACTION;"),

    /** The claim without ordering: one statement through an updatable CTE, no guard needed. */
    CLAIM_UNORDERED(Group.STORE, "WITH candidates AS (SELECT TOP (:maxRows) * FROM {table} WITH (UPDLOCK, ROWLOCK, READPAST)"
            + " WHERE status = 'pending' AND next_attempt_at <= SYSUTCDATETIME()"
            + " AND (lease_until IS NULL OR lease_until <= SYSUTCDATETIME()) ORDER BY seq)"
            + " UPDATE candidates SET lease_owner = :owner, lease_token = :token,"
            + " lease_until = DATEADD(microsecond, :leaseMicros, DATEADD(second, :leaseSeconds, SYSUTCDATETIME()))"
            + " OUTPUT " + Columns.inserted() + ";"),

    /**
     * The per-aggregate claim of {@code outbox.holdRowLocks}: the choice of {@link #CLAIM_ORDERED}, in the
     * transaction the store keeps open (no BEGIN or COMMIT here), and no lease written: the update locks are the
     * claim, taken by the candidates' read and again by primary key ({@link Held#LOCK_BY_KEY}), and the rows are
     * read back in sequence order. A row held this way
     * carries no lease, so the first step cannot see from its columns that it holds its later siblings back; it
     * probes the earliest pending earlier sibling instead ({@link Held#HEAD_NOT_HELD_ELSEWHERE}), so that the
     * scan goes past an aggregate whose head another claim holds rather than filling the batch with its tail
     * (which the gaps step would then drop, leaving the batch empty).
     *
     * <p>Why the per-aggregate rule holds with nothing written on the rows: a row another held claim locks is
     * skipped by READPAST, so it is never a candidate; the NOLOCK sibling checks still see it as it is (pending),
     * so the gaps step drops every later candidate of its aggregate. Its uncommitted outcome is seen as written:
     * sent (or deleted) only after the broker confirmed it, so the later row is published after the earlier
     * one's first delivery (should that claim roll back, the earlier row comes again, a duplicate); a retry or a
     * parking under HOLD_AGGREGATE holds the later row back as the committed one would. Candidates the gaps step
     * drops stay locked (update locks last until the transaction ends) but are not handed out: they wait for this
     * claim to end, as they would have waited for their earlier sibling anyway.
     */
    CLAIM_ORDERED_HELD(Group.STORE, "SET NOCOUNT ON; SET XACT_ABORT ON;"
            + " DECLARE @maxRows int = :maxRows, @parkedHolds bit = :parkedHolds;"
            + " DECLARE @now datetime2(7) = SYSUTCDATETIME();"
            + " DECLARE @candidates TABLE (event_id uniqueidentifier NOT NULL PRIMARY KEY, seq bigint NOT NULL,"
            + " aggregate_type nvarchar(255) NOT NULL, aggregate_id nvarchar(255) NOT NULL, locked bit NOT NULL DEFAULT 0);"
            + Ordered.CANDIDATES
            + Held.HEAD_NOT_HELD_ELSEWHERE
            + " ORDER BY o.seq;"
            + Ordered.GAPS
            + Held.LOCK_BY_KEY
            + " SELECT " + Columns.of("o") + " FROM @candidates c JOIN {table} o WITH (FORCESEEK)"
            + " ON o.event_id = c.event_id ORDER BY o.seq;"),

    /** The claim without ordering, held: the first ready rows nobody else locks, locked and read in one statement. */
    CLAIM_UNORDERED_HELD(Group.STORE, "SELECT TOP (:maxRows) " + Columns.plain()
            + " FROM {table} WITH (UPDLOCK, ROWLOCK, READPAST)"
            + " WHERE status = 'pending' AND next_attempt_at <= SYSUTCDATETIME()"
            + " AND (lease_until IS NULL OR lease_until <= SYSUTCDATETIME()) ORDER BY seq"),

    /**
     * Whether the held claim's transaction is still open on its connection: 0 once SQL Server rolled it back (a
     * deadlock victim, an error under XACT_ABORT). Sent by a renewal and by an outcome that writes nothing.
     */
    HELD_ALIVE(Group.STORE, "SELECT @@TRANCOUNT AS open_transactions"),

    MARK_SENT(Group.STORE, "UPDATE o SET status = 'sent', sent_at = SYSUTCDATETIME(), lease_token = NULL,"
            + " lease_until = NULL" + Fenced.BY_IDS),

    DELETE_SENT(Group.STORE, "DELETE o" + Fenced.BY_IDS),

    RESCHEDULE(Group.STORE, "UPDATE o SET attempts = o.attempts + 1, last_error = r.reason,"
            + " next_attempt_at = DATEADD(microsecond, r.micros, DATEADD(second, r.seconds, SYSUTCDATETIME())),"
            + " lease_token = NULL, lease_until = NULL"
            + " FROM OPENJSON(:retries) WITH (id uniqueidentifier '$.id', seconds int '$.seconds',"
            + " micros int '$.micros', reason nvarchar(max) '$.reason') r"
            + " JOIN {table} o WITH (FORCESEEK) ON o.event_id = r.id"
            + " WHERE o.lease_token = :token AND o.status = 'pending'"),

    PARK(Group.STORE, "UPDATE o SET status = 'parked', attempts = o.attempts + 1, last_error = r.reason,"
            + " lease_token = NULL, lease_until = NULL"
            + " FROM OPENJSON(:parkings) WITH (id uniqueidentifier '$.id', reason nvarchar(max) '$.reason') r"
            + " JOIN {table} o WITH (FORCESEEK) ON o.event_id = r.id"
            + " WHERE o.lease_token = :token AND o.status = 'pending'"),

    RELEASE(Group.STORE, "UPDATE o SET lease_token = NULL, lease_until = NULL" + Fenced.BY_IDS),

    RENEW(Group.STORE, "UPDATE o"
            + " SET lease_until = DATEADD(microsecond, :leaseMicros, DATEADD(second, :leaseSeconds, SYSUTCDATETIME()))"
            + " FROM {table} o WITH (FORCESEEK) WHERE o.lease_token = :token AND o.status = 'pending'"),

    // The outcomes of a held claim, in its open transaction, on rows only it can write (it holds their update
    // locks): no token to fence by. Each clears what an expired lease left on the row, so the late outcome of a
    // leased relay on the same table (while relays switch modes) finds its token gone once this one commits.
    // SYSUTCDATETIME() is the statement's time, so a retry's delay and sent_at count from the outcome.

    MARK_SENT_HELD(Group.STORE, "UPDATE o SET status = 'sent', sent_at = SYSUTCDATETIME(), lease_token = NULL,"
            + " lease_until = NULL" + Fenced.HELD_BY_IDS),

    DELETE_SENT_HELD(Group.STORE, "DELETE o" + Fenced.HELD_BY_IDS),

    RESCHEDULE_HELD(Group.STORE, "UPDATE o SET attempts = o.attempts + 1, last_error = r.reason,"
            + " next_attempt_at = DATEADD(microsecond, r.micros, DATEADD(second, r.seconds, SYSUTCDATETIME())),"
            + " lease_token = NULL, lease_until = NULL"
            + " FROM OPENJSON(:retries) WITH (id uniqueidentifier '$.id', seconds int '$.seconds',"
            + " micros int '$.micros', reason nvarchar(max) '$.reason') r"
            + " JOIN {table} o WITH (FORCESEEK) ON o.event_id = r.id"
            + " WHERE o.status = 'pending'"),

    PARK_HELD(Group.STORE, "UPDATE o SET status = 'parked', attempts = o.attempts + 1, last_error = r.reason,"
            + " lease_token = NULL, lease_until = NULL"
            + " FROM OPENJSON(:parkings) WITH (id uniqueidentifier '$.id', reason nvarchar(max) '$.reason') r"
            + " JOIN {table} o WITH (FORCESEEK) ON o.event_id = r.id"
            + " WHERE o.status = 'pending'"),

    /**
     * The earliest time a pending row is ready on its own: its due time, or its lease expiry if later.
     * READPAST skips rows an open transaction is inserting (invisible, as on PostgreSQL) instead of waiting.
     */
    TIME_UNTIL_NEXT_DUE(Group.STORE, "SELECT DATEDIFF_BIG(microsecond, SYSUTCDATETIME(),"
            + " MIN(CASE WHEN lease_until > next_attempt_at THEN lease_until ELSE next_attempt_at END)) AS micros"
            + " FROM {table} WITH (READPAST) WHERE status = 'pending'"),

    /**
     * As {@link #TIME_UNTIL_NEXT_DUE}, leaving out the rows held claims of this process hold ({@code :held}): an
     * update lock does not make READPAST skip a row, and when such a claim ends is not on the table.
     */
    TIME_UNTIL_NEXT_DUE_HELD(Group.STORE, "SELECT DATEDIFF_BIG(microsecond, SYSUTCDATETIME(),"
            + " MIN(CASE WHEN lease_until > next_attempt_at THEN lease_until ELSE next_attempt_at END)) AS micros"
            + " FROM {table} WITH (READPAST) WHERE status = 'pending'"
            + " AND event_id NOT IN (SELECT j.id FROM OPENJSON(:held) WITH (id uniqueidentifier '$') j)"),

    /** Oldest sent rows first, skipping rows someone else locks, at most {@code :maxRows} per call. */
    PURGE_SENT(Group.STORE, "WITH oldest AS (SELECT TOP (:maxRows) event_id FROM {table} WITH (ROWLOCK, READPAST)"
            + " WHERE status = 'sent' AND sent_at < DATEADD(microsecond, -:retentionMicros,"
            + " DATEADD(second, -:retentionSeconds, SYSUTCDATETIME())) ORDER BY sent_at)"
            + " DELETE FROM oldest"),

    STATS(Group.STORE, "SELECT COUNT_BIG(CASE WHEN status = 'pending' THEN 1 END) AS pending,"
            + " COUNT_BIG(CASE WHEN status = 'pending' AND lease_until > SYSUTCDATETIME() THEN 1 END) AS leased,"
            + " COUNT_BIG(CASE WHEN status = 'parked' THEN 1 END) AS parked,"
            + " DATEDIFF_BIG(microsecond, MIN(CASE WHEN status = 'pending' THEN created_at END), SYSUTCDATETIME())"
            + " AS oldest_micros FROM {table} WITH (READPAST) WHERE status IN ('pending', 'parked')"),

    PARKED_BY_EVENT_IDS(Group.STORE, "SELECT TOP (:limit) " + Columns.plain() + " FROM {table}"
            + " WHERE status = 'parked' AND event_id IN (SELECT j.id FROM OPENJSON(:ids) WITH (id uniqueidentifier '$') j)"
            + " ORDER BY seq"),

    PARKED_BY_AGGREGATE(Group.STORE, "SELECT TOP (:limit) " + Columns.plain() + " FROM {table}"
            + " WHERE status = 'parked' AND aggregate_type = :aggregateType AND aggregate_id = :aggregateId"
            + " ORDER BY seq"),

    PARKED_ALL(Group.STORE, "SELECT TOP (:limit) " + Columns.plain() + " FROM {table}"
            + " WHERE status = 'parked' ORDER BY seq"),

    // The capped parked reads: the payload cut in the database (the console's list), and its whole length.
    PARKED_CAPPED_BY_EVENT_IDS(Group.STORE, "SELECT TOP (:limit) " + Columns.capped() + " FROM {table}"
            + " WHERE status = 'parked' AND event_id IN (SELECT j.id FROM OPENJSON(:ids) WITH (id uniqueidentifier '$') j)"
            + " ORDER BY seq"),

    PARKED_CAPPED_BY_AGGREGATE(Group.STORE, "SELECT TOP (:limit) " + Columns.capped() + " FROM {table}"
            + " WHERE status = 'parked' AND aggregate_type = :aggregateType AND aggregate_id = :aggregateId"
            + " ORDER BY seq"),

    PARKED_CAPPED_ALL(Group.STORE, "SELECT TOP (:limit) " + Columns.capped() + " FROM {table}"
            + " WHERE status = 'parked' ORDER BY seq"),

    REPLAY_BY_EVENT_IDS(Group.STORE, "UPDATE o SET " + Columns.REPLAYED
            + " FROM OPENJSON(:ids) WITH (id uniqueidentifier '$') j JOIN {table} o WITH (FORCESEEK)"
            + " ON o.event_id = j.id WHERE o.status = 'parked'"),

    REPLAY_BY_AGGREGATE(Group.STORE, "UPDATE {table} SET " + Columns.REPLAYED
            + " WHERE status = 'parked' AND aggregate_type = :aggregateType AND aggregate_id = :aggregateId"),

    REPLAY_ALL(Group.STORE, "UPDATE {table} SET " + Columns.REPLAYED + " WHERE status = 'parked'"),

    CAPTURE_STATE_FIND_ALL(Group.CAPTURE_STATE, "SELECT [identity], mode, fingerprint, first_run_at, last_run_at"
            + " FROM {captureState} ORDER BY first_run_at, [identity]"),

    CAPTURE_STATE_FIND(Group.CAPTURE_STATE, "SELECT [identity], mode, fingerprint, first_run_at, last_run_at"
            + " FROM {captureState} WHERE [identity] = :identity"),

    /** Insert or update in one statement; HOLDLOCK keeps two first starts from both inserting. */
    CAPTURE_STATE_RECORD_START(Group.CAPTURE_STATE, "MERGE INTO {captureState} WITH (HOLDLOCK) AS target"
            + " USING (SELECT :identity AS [identity], :mode AS mode, :fingerprint AS fingerprint) AS source"
            + " ON target.[identity] = source.[identity]"
            + " WHEN MATCHED THEN UPDATE SET last_run_at = SYSUTCDATETIME(), mode = source.mode,"
            + " fingerprint = source.fingerprint"
            + " WHEN NOT MATCHED THEN INSERT ([identity], mode, fingerprint, first_run_at, last_run_at)"
            + " VALUES (source.[identity], source.mode, source.fingerprint, SYSUTCDATETIME(), SYSUTCDATETIME());"),

    CAPTURE_STATE_RECORD_STATUS(Group.CAPTURE_STATE, "UPDATE {captureState} SET state = :state,"
            + " fault_reason = :reason, status_at = SYSUTCDATETIME() WHERE [identity] = :identity"),

    CAPTURE_STATE_FORGET(Group.CAPTURE_STATE, "DELETE FROM {captureState} WHERE [identity] = :identity"),

    /** Returns sp_getapplock's result: 0 or 1 granted, -1 held elsewhere (no wait), below -1 an error. */
    LOCK_ACQUIRE(Group.LOCK, "SET NOCOUNT ON; DECLARE @result int;"
            + " EXEC @result = sys.sp_getapplock @Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Session',"
            + " @LockTimeout = 0, @DbPrincipal = 'public';"
            + " SELECT @result AS result;"),

    LOCK_IS_HELD(Group.LOCK, "SELECT APPLOCK_MODE('public', ?, 'Session') AS mode"),

    LOCK_RELEASE(Group.LOCK, "EXEC sys.sp_releaseapplock @Resource = ?, @LockOwner = 'Session', @DbPrincipal = 'public'"),

    INSPECT_DATABASE_CDC(Group.INSPECTOR, "SELECT DB_NAME() AS name, is_cdc_enabled FROM sys.databases"
            + " WHERE database_id = DB_ID()"),

    INSPECT_TABLE_CDC(Group.INSPECTOR, "SELECT t.is_tracked_by_cdc FROM sys.tables t"
            + " JOIN sys.schemas s ON s.schema_id = t.schema_id WHERE s.name = ? AND t.name = ?"),

    INSPECT_AGENT_SERVICE(Group.INSPECTOR, "SELECT status_desc FROM sys.dm_server_services"
            + " WHERE servicename LIKE N'SQL Server Agent%'"),

    /**
     * The first fallback, where sys.dm_server_services has no Agent row: a running Agent keeps sessions
     * named SQLAgent - ... open. Only conclusive with VIEW SERVER STATE, which the first column tells.
     */
    INSPECT_AGENT_SESSIONS(Group.INSPECTOR, "SELECT HAS_PERMS_BY_NAME(NULL, NULL, 'VIEW SERVER STATE') AS can_see,"
            + " (SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE program_name LIKE N'SQLAgent%') AS agent_sessions"),

    /** The last fallback, for accounts without VIEW SERVER STATE; answers 'Running.' or 'Stopped.'. */
    INSPECT_AGENT_SERVICECONTROL(Group.INSPECTOR, "EXEC master.dbo.xp_servicecontrol N'QUERYSTATE', N'SQLServerAGENT'");

    /** Which part of the adapter runs a statement, and so which test suite exercises it. */
    enum Group { WRITER, STORE, CAPTURE_STATE, LOCK, INSPECTOR }

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{(table|captureState)}");

    private final Group group;
    private final String template;

    SqlServerStatements(Group group, String template) {
        this.group = group;
        this.template = template;
    }

    Group group() {
        return group;
    }

    String template() {
        return template;
    }

    /** The statement for one outbox: table names filled in, parameters left as they are. */
    String render(SqlServerOutboxSettings settings) {
        Matcher matcher = PLACEHOLDER.matcher(template);
        StringBuilder out = new StringBuilder();
        while (matcher.find()) {
            String name = matcher.group(1).equals("table")
                    ? settings.qualifiedTable()
                    : settings.qualifiedCaptureStateTable();
            matcher.appendReplacement(out, Matcher.quoteReplacement(name));
        }
        return matcher.appendTail(out).toString();
    }

    /**
     * The tail of the fenced updates by id list. The ids come as a JSON array; FORCESEEK makes SQL Server
     * reach each row through an index (the primary key) instead of scanning, because a scan would take
     * update locks on every row it reads and wait for transactions that are still inserting rows.
     */
    static final class Fenced {
        static final String BY_IDS = " FROM OPENJSON(:ids) WITH (id uniqueidentifier '$') j"
                + " JOIN {table} o WITH (FORCESEEK) ON o.event_id = j.id"
                + " WHERE o.lease_token = :token AND o.status = 'pending'";

        /** The same for a held claim: the rows are fenced by the claim's own update locks, not by a token. */
        static final String HELD_BY_IDS = " FROM OPENJSON(:ids) WITH (id uniqueidentifier '$') j"
                + " JOIN {table} o WITH (FORCESEEK) ON o.event_id = j.id"
                + " WHERE o.status = 'pending'";

        private Fenced() {
        }
    }

    /** Pieces of the held claims. */
    /** The steps the per-aggregate claims share, leased ({@link #CLAIM_ORDERED}) and held ({@link #CLAIM_ORDERED_HELD}). */
    static final class Ordered {
        /**
         * Candidates: the first ready rows nobody else locks, with no earlier sibling of their aggregate that is
         * leased, not yet due, or parked under HOLD_AGGREGATE (read as it is, NOLOCK). The caller ends the WHERE.
         */
        static final String CANDIDATES = " INSERT INTO @candidates (event_id, seq, aggregate_type, aggregate_id)"
            + " SELECT TOP (@maxRows) o.event_id, o.seq, o.aggregate_type, o.aggregate_id"
            + " FROM {table} o WITH (UPDLOCK, ROWLOCK, READPAST)"
            + " WHERE o.status = 'pending' AND o.next_attempt_at <= @now"
            + " AND (o.lease_until IS NULL OR o.lease_until <= @now)"
            + " AND NOT EXISTS (SELECT 1 FROM {table} e WITH (NOLOCK)"
            + " WHERE e.aggregate_type = o.aggregate_type AND e.aggregate_id = o.aggregate_id AND e.seq < o.seq"
            + " AND ((e.status = 'pending' AND (e.next_attempt_at > @now OR e.lease_until > @now))"
            + " OR (e.status = 'parked' AND @parkedHolds = 1)))";

        /** Gaps: drops a candidate behind an earlier pending (or holding parked) sibling that is not a candidate. */
        static final String GAPS = " DELETE c FROM @candidates c WHERE EXISTS (SELECT 1 FROM {table} e WITH (NOLOCK)"
            + " WHERE e.aggregate_type = c.aggregate_type AND e.aggregate_id = c.aggregate_id AND e.seq < c.seq"
            + " AND (e.status = 'pending' OR (e.status = 'parked' AND @parkedHolds = 1))"
            + " AND NOT EXISTS (SELECT 1 FROM @candidates x WHERE x.event_id = e.event_id));";

        private Ordered() {
        }
    }

    static final class Held {
        /**
         * The candidate {@code o} is not behind an earliest pending earlier sibling that another transaction locks.
         * The sibling is found as it is (NOLOCK) and then probed through its primary key {@code WITH (UPDLOCK,
         * ROWLOCK, READPAST, FORCESEEK)}, where {@link #LOCK_BY_KEY} locks every held row: a row another claim (or an uncommitted insert or outcome) locks is skipped, so the probe
         * finds nothing and the candidate is left out. A free sibling is locked by the probe, as the scan locks it
         * anyway when it is ready (it comes first in sequence order); this transaction's own locks never hide a
         * row from it. One lookup and one key probe per row scanned: O(rows), not O(rows × siblings). The gaps
         * step stays the guarantee; this only keeps a held head's tail out of the batch.
         */
        static final String HEAD_NOT_HELD_ELSEWHERE = " AND NOT EXISTS (SELECT 1 FROM (SELECT TOP (1) h.event_id"
                + " FROM {table} h WITH (NOLOCK)"
                + " WHERE h.aggregate_type = o.aggregate_type AND h.aggregate_id = o.aggregate_id AND h.seq < o.seq"
                + " AND h.status = 'pending' ORDER BY h.seq) head"
                + " WHERE NOT EXISTS (SELECT 1 FROM {table} x WITH (UPDLOCK, ROWLOCK, READPAST, FORCESEEK)"
                + " WHERE x.event_id = head.event_id))";

        /**
         * The candidates locked again through their primary key ({@code event_id}, with the lookup into the
         * clustered {@code seq} index that reading {@code status} takes), and each aggregate cut at its first
         * candidate that cannot be. The first step's scan may lock only the keys of the index it reads (the
         * filtered pending index covers it), while the probe and the outcomes reach a row through its primary key,
         * and another claimer's plan may read yet another index: with the primary key and clustered keys locked
         * too, every claimer meets every held row's lock where it looks. A candidate another transaction locks there (its probe, or a
         * claim through another index) is skipped, and it and the later candidates of its aggregate are dropped
         * (they stay locked until this claim ends, and are not handed out).
         */
        static final String LOCK_BY_KEY = " UPDATE c SET locked = 1 FROM @candidates c"
                + " JOIN {table} o WITH (UPDLOCK, ROWLOCK, READPAST, FORCESEEK) ON o.event_id = c.event_id"
                + " WHERE o.status = 'pending';"
                + " DELETE c FROM @candidates c WHERE EXISTS (SELECT 1 FROM @candidates u WHERE u.locked = 0"
                + " AND u.aggregate_type = c.aggregate_type AND u.aggregate_id = c.aggregate_id AND u.seq <= c.seq);";

        private Held() {
        }
    }

    /** The columns a delivery or a parked event is read from. */
    static final class Columns {
        private static final String[] NAMES = {"seq", "event_id", "aggregate_type", "aggregate_id", "event_type",
            "destination", "payload", "content_type", "headers", "created_at", "attempts", "last_error"};

        static final String REPLAYED = "status = 'pending', next_attempt_at = SYSUTCDATETIME(), attempts = 0,"
                + " lease_token = NULL, lease_until = NULL";

        private Columns() {
        }

        static String plain() {
            return String.join(", ", NAMES);
        }

        /** As {@link #plain()}, with at most :maxPayloadBytes of the payload and its whole length as payload_bytes. */
        static String capped() {
            return plain().replace("payload,",
                    "SUBSTRING(payload, 1, :maxPayloadBytes) AS payload, DATALENGTH(payload) AS payload_bytes,");
        }

        /** As {@link #plain()}, each column prefixed with a table alias. */
        static String of(String alias) {
            return alias + "." + String.join(", " + alias + ".", NAMES);
        }

        static String inserted() {
            return "inserted." + String.join(", inserted.", NAMES);
        }
    }
}
