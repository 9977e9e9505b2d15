package io.queuebox.inbox;

/** The databases the inbox supports; each brings its own SQL, scripts and name rules. */
public enum InboxDatabase {
    /** PostgreSQL: {@code INSERT ... ON CONFLICT DO NOTHING}. */
    POSTGRESQL(InboxDialect.POSTGRESQL),
    /** SQL Server 2016 or later: {@code INSERT ... WHERE NOT EXISTS} under {@code UPDLOCK, HOLDLOCK}. */
    SQL_SERVER(InboxDialect.SQL_SERVER);

    private final InboxDialect dialect;

    InboxDatabase(InboxDialect dialect) {
        this.dialect = dialect;
    }

    /** Classpath location of this database's Flyway scripts, for example {@code db/queuebox/inbox/postgres}. */
    public String schemaLocation() {
        return dialect.location;
    }

    InboxDialect dialect() {
        return dialect;
    }
}
