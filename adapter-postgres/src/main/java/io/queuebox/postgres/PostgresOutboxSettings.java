package io.queuebox.postgres;

import io.queuebox.jdbc.SettingChecks;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * Where the PostgreSQL outbox lives and how the writer and the store treat it.
 *
 * <p>Schema and table names are identifiers taken from configuration, so they are validated before
 * they reach SQL: lower-case letters, digits and {@code _}, starting with a letter or {@code _}; a
 * schema up to 63 characters, a table up to 48 (the indexes are named after the table with a suffix
 * and must stay within PostgreSQL's 63). Upper case is refused rather than folded, so the name you
 * configure is exactly the name in the catalog. The SQL quotes them anyway.
 *
 * <p>{@code maxPayloadBytes} is the writer's limit, 1 MiB unless set. The store parks a claimed row whose
 * payload is larger only when {@code maxPayloadBytes} was set ({@link #claimPayloadLimit()}): applications may
 * raise their writer's limit, and a relay must not park the events their writer accepted because it runs with
 * the default. Without a limit, a payload the broker refuses fails as a permanent failure and is parked then.
 */
public final class PostgresOutboxSettings {

    /** The default schema: {@code public}. */
    public static final String DEFAULT_SCHEMA = "public";
    /** The default outbox table: {@code queuebox_outbox}. */
    public static final String DEFAULT_TABLE = "queuebox_outbox";
    /** The default largest payload the writer accepts: 1 MiB. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

    private static final int MAX_CHANNEL_LENGTH = 63;
    private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final Pattern TABLE = Pattern.compile("[a-z_][a-z0-9_]{0,47}");

    private final String schema;
    private final String table;
    private final int maxPayloadBytes;
    private final boolean maxPayloadBytesSet;
    private final boolean deleteOnSend;
    private final boolean holdRowLocks;

    private PostgresOutboxSettings(Builder builder) {
        this.schema = builder.schema;
        this.table = builder.table;
        this.maxPayloadBytes = builder.maxPayloadBytes;
        this.maxPayloadBytesSet = builder.maxPayloadBytesSet;
        this.deleteOnSend = builder.deleteOnSend;
        this.holdRowLocks = builder.holdRowLocks;
    }

    /** The defaults: {@code public.queuebox_outbox}, 1 MiB payloads, sent rows kept until purged. */
    public static PostgresOutboxSettings defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public String schema() {
        return schema;
    }

    public String table() {
        return table;
    }

    /** The largest payload the writer accepts: {@code outbox.maxPayloadBytes}, 1 MiB unless set. */
    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    /**
     * The largest payload the store delivers: a claimed row with a larger one is parked at claim, naming its
     * size and this limit. Only {@code outbox.maxPayloadBytes} when it was set; empty with the default, and
     * then the store leaves payload sizes to the broker.
     */
    public OptionalInt claimPayloadLimit() {
        return maxPayloadBytesSet ? OptionalInt.of(maxPayloadBytes) : OptionalInt.empty();
    }

    public boolean deleteOnSend() {
        return deleteOnSend;
    }

    /**
     * Whether a claim holds its rows by their row locks, in a transaction kept open until every row of the
     * claim has its outcome, rather than by a lease written on every row. See {@link Builder#holdRowLocks}.
     */
    public boolean holdRowLocks() {
        return holdRowLocks;
    }

    /** {@code "schema"."table"}, ready for SQL. */
    String qualifiedTable() {
        return quote(schema) + "." + quote(table);
    }

    /** {@code "schema"."queuebox_capture_state"}, ready for SQL. */
    String qualifiedCaptureStateTable() {
        return quote(schema) + "." + quote("queuebox_capture_state");
    }

    /**
     * The channel the outbox's inserts notify (schema version 4): {@code schema.table}, or, when that is longer
     * than PostgreSQL's 63 bytes for a channel name, its first 30 characters, {@code _} and the md5 of the whole,
     * exactly as {@code V4__queuebox_insert_notify.sql} computes it. Unquoted; quote it with {@link #quote}.
     */
    public String notifyChannel() {
        String channel = schema + "." + table;
        if (channel.length() <= MAX_CHANNEL_LENGTH) {
            return channel;
        }
        try {
            byte[] digest = java.security.MessageDigest.getInstance("MD5")
                    .digest(channel.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return channel.substring(0, 30) + "_" + java.util.HexFormat.of().formatHex(digest);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has MD5", e);
        }
    }

    /** For messages: {@code schema.table}. */
    String displayName() {
        return schema + "." + table;
    }

    static String quote(String identifier) {
        return '"' + identifier + '"';
    }

    @Override
    public String toString() {
        return "PostgresOutboxSettings[" + displayName() + ", maxPayloadBytes=" + maxPayloadBytes
                + (maxPayloadBytesSet ? "" : " (default, not checked at claim)") + ", deleteOnSend=" + deleteOnSend
                + ", holdRowLocks=" + holdRowLocks + "]";
    }

    /** Validates every value as it is set, naming the configuration key in the message. */
    public static final class Builder {
        private String schema = DEFAULT_SCHEMA;
        private String table = DEFAULT_TABLE;
        private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        private boolean maxPayloadBytesSet;
        private boolean deleteOnSend;
        private boolean holdRowLocks = true;

        private Builder() {
        }

        /** {@code outbox.schema}; default {@code public}. */
        public Builder schema(String value) {
            this.schema = identifier("outbox.schema", value, SCHEMA, 63);
            return this;
        }

        /** {@code outbox.table}; default {@code queuebox_outbox}. */
        public Builder table(String value) {
            this.table = identifier("outbox.table", value, TABLE, 48);
            return this;
        }

        /**
         * {@code outbox.maxPayloadBytes}: the largest payload the writer accepts; default 1 MiB, at least 1.
         * Once set, the store also parks a claimed row with a larger payload ({@link #claimPayloadLimit()}).
         */
        public Builder maxPayloadBytes(int value) {
            this.maxPayloadBytes = SettingChecks.atLeastOne("outbox.maxPayloadBytes", value);
            this.maxPayloadBytesSet = true;
            return this;
        }

        /**
         * {@code outbox.deleteOnSend}: delete a row once the broker confirmed it instead of marking it
         * sent (and purging it later); default false.
         */
        public Builder deleteOnSend(boolean value) {
            this.deleteOnSend = value;
            return this;
        }

        /**
         * {@code outbox.holdRowLocks}; default true. True: a claim locks its rows ({@code FOR UPDATE SKIP LOCKED})
         * in a transaction that stays open, on a connection of its own, until every claimed row has its outcome;
         * the only row write is the outcome, a relay that dies frees its rows the moment its connection closes,
         * and the lease length becomes the transaction's {@code idle_in_transaction_session_timeout} and
         * {@code tcp_user_timeout}, so a relay that stops answering, or stops reading, loses them after it. False:
         * each claimed row gets a lease written on it (a row version per claim), for a connection pooler that cannot
         * keep a transaction open between statements (PgBouncer in statement mode) or while the relays of a table
         * switch modes one by one (docs/concepts/delivery.md).
         */
        public Builder holdRowLocks(boolean value) {
            this.holdRowLocks = value;
            return this;
        }

        public PostgresOutboxSettings build() {
            return new PostgresOutboxSettings(this);
        }

        private static String identifier(String key, String value, Pattern pattern, int maxLength) {
            return SettingChecks.identifier(key, value, pattern, maxLength, "lower-case letters");
        }
    }
}
