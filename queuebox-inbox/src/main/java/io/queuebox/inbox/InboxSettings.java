package io.queuebox.inbox;

import io.queuebox.jdbc.SettingChecks;
import java.util.Objects;

/**
 * Where the inbox table lives. Schema and table are identifiers that reach SQL, so they are checked when set,
 * against the database's rules, and a bad one is an {@link IllegalArgumentException} naming the key
 * ({@code inbox.schema}, {@code inbox.table}) and the value:
 *
 * <ul>
 *   <li>PostgreSQL: lower-case letters, digits and {@code _}, starting with a letter or {@code _}; a schema up to
 *       63 characters, a table up to 48 (its index is named after it and must stay within 63). Upper case is
 *       refused rather than folded, so the name you configure is the name in the catalog.</li>
 *   <li>SQL Server: letters, digits and {@code _}; a schema up to 128 characters, a table up to 100.</li>
 * </ul>
 *
 * Defaults: the database's default schema ({@code public}, {@code dbo}) and the table {@value #DEFAULT_TABLE}.
 */
public final class InboxSettings {

    /** The default inbox table: {@value}. */
    public static final String DEFAULT_TABLE = "queuebox_inbox";

    private final InboxDatabase database;
    private final String schema;
    private final String table;

    private InboxSettings(Builder builder) {
        this.database = builder.database;
        this.schema = builder.schema;
        this.table = builder.table;
    }

    /** The defaults for {@code database}: its default schema, table {@value #DEFAULT_TABLE}. */
    public static InboxSettings defaults(InboxDatabase database) {
        return builder(database).build();
    }

    public static Builder builder(InboxDatabase database) {
        return new Builder(Objects.requireNonNull(database, "database"));
    }

    public InboxDatabase database() {
        return database;
    }

    public String schema() {
        return schema;
    }

    public String table() {
        return table;
    }

    /** For messages: {@code schema.table}. */
    String displayName() {
        return schema + "." + table;
    }

    @Override
    public String toString() {
        return "InboxSettings[" + database + ", " + displayName() + "]";
    }

    /** Checks every value as it is set, naming the key in the message. */
    public static final class Builder {
        private final InboxDatabase database;
        private String schema;
        private String table = DEFAULT_TABLE;

        private Builder(InboxDatabase database) {
            this.database = database;
            this.schema = database.dialect().defaultSchema;
        }

        /** {@code inbox.schema}; default {@code public} (PostgreSQL) or {@code dbo} (SQL Server). */
        public Builder schema(String value) {
            InboxDialect dialect = database.dialect();
            this.schema = SettingChecks.identifier("inbox.schema", value, dialect.schemaPattern,
                    dialect.maxSchemaLength, dialect.letters);
            return this;
        }

        /** {@code inbox.table}; default {@value InboxSettings#DEFAULT_TABLE}. */
        public Builder table(String value) {
            InboxDialect dialect = database.dialect();
            this.table = SettingChecks.identifier("inbox.table", value, dialect.tablePattern,
                    dialect.maxTableLength, dialect.letters);
            return this;
        }

        public InboxSettings build() {
            return new InboxSettings(this);
        }
    }
}
