package io.queuebox.capture;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureSettings;
import java.nio.file.Path;
import java.util.Properties;

/**
 * SQL Server change data capture: Debezium reads the CDC change tables that SQL Server Agent's capture job
 * fills from the transaction log. The connector keeps a schema history, stored next to the offsets in the
 * state directory ({@code io.debezium.storage.file.history.FileSchemaHistory}, from debezium-storage-file,
 * which debezium-connector-sqlserver brings).
 */
final class SqlServerCdcDialect implements ConnectorDialect {

    static final String SCHEMA_HISTORY_CLASS = "io.debezium.storage.file.history.FileSchemaHistory";

    private final boolean encrypt;
    private final boolean trustServerCertificate;

    SqlServerCdcDialect(boolean encrypt, boolean trustServerCertificate) {
        this.encrypt = encrypt;
        this.trustServerCertificate = trustServerCertificate;
    }

    @Override
    public Properties connectorProperties(CaptureSettings settings, DebeziumCapture.Credentials credentials) {
        CaptureFingerprint fp = settings.fingerprint();
        FileCaptureStateDirectory directory = new FileCaptureStateDirectory(Path.of(settings.stateDirectory()));
        Properties props = new Properties();
        props.setProperty("connector.class", "io.debezium.connector.sqlserver.SqlServerConnector");
        props.setProperty("database.hostname", fp.host());
        props.setProperty("database.port", Integer.toString(settings.port()));
        props.setProperty("database.user", credentials.username());
        props.setProperty("database.password", credentials.password());
        props.setProperty("database.names", fp.database());
        // Passed through to mssql-jdbc, whose default since 10.2 is encrypt=true with certificate validation.
        props.setProperty("database.encrypt", Boolean.toString(encrypt));
        props.setProperty("database.trustServerCertificate", Boolean.toString(trustServerCertificate));
        props.setProperty("schema.history.internal", SCHEMA_HISTORY_CLASS);
        props.setProperty("schema.history.internal.file.filename", directory.historyFile().toString());
        // The history only needs the outbox table's structure, not every table of the database.
        props.setProperty("schema.history.internal.store.only.captured.tables.ddl", "true");
        return props;
    }

    /** {@code prefix.database.schema.table}: the SQL Server connector names topics after the database too. */
    @Override
    public String outboxTopic(String prefix, CaptureSettings settings) {
        CaptureFingerprint fp = settings.fingerprint();
        return prefix + "." + fp.database() + "." + fp.schema() + "." + fp.table();
    }
}
