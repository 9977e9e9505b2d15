package io.queuebox.sqlserver;

import io.queuebox.jdbc.SettingChecks;
import java.util.regex.Pattern;

/**
 * Where the SQL Server outbox lives and how the writer and the store treat it.
 *
 * <p>Schema and table names are identifiers taken from configuration, so they are validated before they
 * reach SQL: letters, digits and {@code _}, starting with a letter or {@code _}; a schema up to 128
 * characters (SQL Server's {@code sysname}), a table up to 100 (its constraints and indexes are named after
 * the table with a suffix and must stay within 128). Upper case is allowed because SQL Server compares
 * identifiers case-insensitively under the usual collations and PascalCase names are common there. The SQL
 * quotes them with brackets anyway.
 */
public final class SqlServerOutboxSettings {

    /** The default schema: {@code dbo}. */
    public static final String DEFAULT_SCHEMA = "dbo";
    /** The default outbox table: {@code queuebox_outbox}. */
    public static final String DEFAULT_TABLE = "queuebox_outbox";
    /** The default largest payload the writer accepts: 1 MiB. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
    /** The capture state table, next to the outbox in the same schema. */
    public static final String CAPTURE_STATE_TABLE = "queuebox_capture_state";

    private static final Pattern SCHEMA = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,99}");

    private final String schema;
    private final String table;
    private final int maxPayloadBytes;
    private final boolean deleteOnSend;
    private final boolean holdRowLocks;

    private SqlServerOutboxSettings(Builder builder) {
        this.schema = builder.schema;
        this.table = builder.table;
        this.maxPayloadBytes = builder.maxPayloadBytes;
        this.deleteOnSend = builder.deleteOnSend;
        this.holdRowLocks = builder.holdRowLocks;
    }

    /** The defaults: {@code dbo.queuebox_outbox}, 1 MiB payloads, sent rows kept until purged. */
    public static SqlServerOutboxSettings defaults() {
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

    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    public boolean deleteOnSend() {
        return deleteOnSend;
    }

    /**
     * Whether a claim holds its rows by the update locks of a transaction kept open until every row of the
     * claim has its outcome, rather than by a lease written on every row. See {@link Builder#holdRowLocks}.
     */
    public boolean holdRowLocks() {
        return holdRowLocks;
    }

    /** {@code [schema].[table]}, ready for SQL. */
    String qualifiedTable() {
        return quote(schema) + "." + quote(table);
    }

    /** {@code [schema].[queuebox_capture_state]}, ready for SQL. */
    String qualifiedCaptureStateTable() {
        return quote(schema) + "." + quote(CAPTURE_STATE_TABLE);
    }

    /** For messages: {@code schema.table}. */
    String displayName() {
        return schema + "." + table;
    }

    // The validated identifiers cannot contain ']', so no escaping is needed inside the brackets.
    static String quote(String identifier) {
        return '[' + identifier + ']';
    }

    @Override
    public String toString() {
        return "SqlServerOutboxSettings[" + displayName() + ", maxPayloadBytes=" + maxPayloadBytes
                + ", deleteOnSend=" + deleteOnSend + ", holdRowLocks=" + holdRowLocks + "]";
    }

    /** Validates every value as it is set, naming the configuration key in the message. */
    public static final class Builder {
        private String schema = DEFAULT_SCHEMA;
        private String table = DEFAULT_TABLE;
        private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        private boolean deleteOnSend;
        private boolean holdRowLocks;

        private Builder() {
        }

        /** {@code outbox.schema}; default {@code dbo}. */
        public Builder schema(String value) {
            this.schema = identifier("outbox.schema", value, SCHEMA, 128);
            return this;
        }

        /** {@code outbox.table}; default {@code queuebox_outbox}. */
        public Builder table(String value) {
            this.table = identifier("outbox.table", value, TABLE, 100);
            return this;
        }

        /** {@code outbox.maxPayloadBytes}: the largest payload the writer accepts; default 1 MiB, at least 1. */
        public Builder maxPayloadBytes(int value) {
            this.maxPayloadBytes = SettingChecks.atLeastOne("outbox.maxPayloadBytes", value);
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
         * {@code outbox.holdRowLocks}; default false. Experimental, and never run against a real SQL Server yet
         * (docs/reference/sqlserver.md). True: a claim selects its rows {@code WITH (UPDLOCK, ROWLOCK, READPAST)}
         * in a transaction kept open on a connection of its own, writes nothing on them, and writes their
         * outcomes in that transaction, which commits once every row has one; a relay that dies frees its rows
         * when its connection closes. The store's own deadline (the lease length, restarted by a renewal and by
         * every outcome) ends a claim nobody speaks for by closing its connection. False: every claimed row gets
         * a lease.
         */
        public Builder holdRowLocks(boolean value) {
            this.holdRowLocks = value;
            return this;
        }

        public SqlServerOutboxSettings build() {
            return new SqlServerOutboxSettings(this);
        }

        private static String identifier(String key, String value, Pattern pattern, int maxLength) {
            return SettingChecks.identifier(key, value, pattern, maxLength, "letters");
        }
    }
}
