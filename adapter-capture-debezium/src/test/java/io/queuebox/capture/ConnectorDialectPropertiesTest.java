package io.queuebox.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.debezium.config.Configuration;
import io.debezium.config.Field;
import io.debezium.connector.postgresql.PostgresConnectorConfig;
import io.debezium.connector.sqlserver.SqlServerConnectorConfig;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Debezium properties each capture mode produces; no database needed. */
class ConnectorDialectPropertiesTest {

    private static final CaptureIdentity IDENTITY = new CaptureIdentity("relay-1");

    @TempDir
    Path state;

    @Test
    void postgresLogicalUsesPgoutputOnTheUsersPublicationAndSlot() {
        CaptureSettings settings = settings(CaptureMode.POSTGRES_LOGICAL, 5432,
                new CaptureFingerprint("queuebox_slot", "queuebox_pub", "public", "queuebox_outbox", "db.local", "shop"));
        DebeziumCapture capture = DebeziumCapture.builder().credentials("capture", "secret").build();
        ConnectorDialect dialect = capture.dialectFor(CaptureMode.POSTGRES_LOGICAL);
        Properties props = capture.engineProperties(settings, IDENTITY, dialect);

        assertThat(dialect).isInstanceOf(PostgresLogicalDialect.class);
        assertThat(props.getProperty("connector.class")).isEqualTo("io.debezium.connector.postgresql.PostgresConnector");
        assertThat(props.getProperty("plugin.name")).isEqualTo("pgoutput");
        assertThat(props.getProperty("database.hostname")).isEqualTo("db.local");
        assertThat(props.getProperty("database.port")).isEqualTo("5432");
        assertThat(props.getProperty("database.dbname")).isEqualTo("shop");
        assertThat(props.getProperty("slot.name")).isEqualTo("queuebox_slot");
        assertThat(props.getProperty("publication.name")).isEqualTo("queuebox_pub");
        assertThat(props.getProperty("publication.autocreate.mode")).isEqualTo("disabled");
        assertThat(props.getProperty("table.include.list")).isEqualTo("public.queuebox_outbox");
        assertThat(props).doesNotContainKey("schema.history.internal");
        assertThat(dialect.outboxTopic("queuebox", settings)).isEqualTo("queuebox.public.queuebox_outbox");
        assertThat(props.getProperty("max.batch.size")).as("a row leaves Debezium's queue as soon as it is read").isEqualTo("1");
    }

    @Test
    void sqlServerCdcReadsTheDatabaseWithAFileSchemaHistoryInTheStateDirectory() throws Exception {
        CaptureSettings settings = settings(CaptureMode.SQLSERVER_CDC, 1433,
                new CaptureFingerprint("dbo_queuebox_outbox", "", "dbo", "queuebox_outbox", "mssql.local", "Shop"));
        DebeziumCapture capture = DebeziumCapture.builder().credentials("capture", "secret").build();
        ConnectorDialect dialect = capture.dialectFor(CaptureMode.SQLSERVER_CDC);
        Properties props = capture.engineProperties(settings, IDENTITY, dialect);

        assertThat(dialect).isInstanceOf(SqlServerCdcDialect.class);
        assertThat(props.getProperty("connector.class")).isEqualTo("io.debezium.connector.sqlserver.SqlServerConnector");
        assertThat(props.getProperty("database.hostname")).isEqualTo("mssql.local");
        assertThat(props.getProperty("database.port")).isEqualTo("1433");
        assertThat(props.getProperty("database.user")).isEqualTo("capture");
        assertThat(props.getProperty("database.password")).isEqualTo("secret");
        assertThat(props.getProperty("database.names")).isEqualTo("Shop");
        assertThat(props.getProperty("database.encrypt")).isEqualTo("true");
        assertThat(props.getProperty("database.trustServerCertificate")).isEqualTo("false");
        assertThat(props.getProperty("table.include.list")).isEqualTo("dbo.queuebox_outbox");
        assertThat(props.getProperty("column.exclude.list"))
                .isEqualTo("dbo.queuebox_outbox.payload,dbo.queuebox_outbox.headers");
        assertThat(props.getProperty("snapshot.mode")).isEqualTo("no_data");
        assertThat(props.getProperty("schema.history.internal")).isEqualTo(SqlServerCdcDialect.SCHEMA_HISTORY_CLASS);
        assertThat(Path.of(props.getProperty("schema.history.internal.file.filename")))
                .isEqualTo(state.toAbsolutePath().normalize().resolve("history.dat"));
        assertThat(Path.of(props.getProperty("offset.storage.file.filename")))
                .isEqualTo(state.toAbsolutePath().normalize().resolve("offsets.dat"));
        assertThat(props).doesNotContainKeys("slot.name", "publication.name", "plugin.name", "database.dbname");
        assertThat(dialect.outboxTopic("queuebox", settings)).isEqualTo("queuebox.Shop.dbo.queuebox_outbox");
        // SQL Server's connector reads the change tables once per poll interval anyway: its rows wake delivery per poll.
        assertThat(props).doesNotContainKey("max.batch.size");
        // The named classes are on the classpath, so the engine will find them.
        Class.forName(props.getProperty("connector.class"));
        Class.forName(props.getProperty("schema.history.internal"));
        assertThat(problems(props, SqlServerConnectorConfig.ALL_FIELDS)).as("Debezium's own validation").isEmpty();
    }

    @Test
    void debeziumsValidationRejectsWhatItShould() {
        Properties bad = new Properties();
        bad.setProperty("snapshot.mode", "never-heard-of-it");
        assertThat(problems(bad, SqlServerConnectorConfig.ALL_FIELDS)).isNotEmpty();
    }

    @Test
    void postgresPropertiesPassDebeziumsValidation() {
        CaptureSettings settings = settings(CaptureMode.POSTGRES_LOGICAL, 5432,
                new CaptureFingerprint("queuebox_slot", "queuebox_pub", "public", "queuebox_outbox", "db.local", "shop"));
        DebeziumCapture capture = DebeziumCapture.builder().credentials("capture", "secret").build();
        Properties props = capture.engineProperties(settings, IDENTITY, capture.dialectFor(CaptureMode.POSTGRES_LOGICAL));
        assertThat(problems(props, PostgresConnectorConfig.ALL_FIELDS)).isEmpty();
    }

    private static List<String> problems(Properties props, Field.Set fields) {
        List<String> problems = new ArrayList<>();
        Configuration.from(props).validateAndRecord(fields, problems::add);
        return problems;
    }

    @Test
    void sqlServerEncryptionSettingsReachTheDriverProperties() {
        CaptureSettings settings = settings(CaptureMode.SQLSERVER_CDC, 1433,
                new CaptureFingerprint("", "", "dbo", "queuebox_outbox", "localhost", "test"));
        DebeziumCapture capture = DebeziumCapture.builder().credentials("sa", "pw")
                .sqlServerEncrypt(false).sqlServerTrustServerCertificate(true).build();
        Properties props = capture.engineProperties(settings, IDENTITY, capture.dialectFor(CaptureMode.SQLSERVER_CDC));

        assertThat(props.getProperty("database.encrypt")).isEqualTo("false");
        assertThat(props.getProperty("database.trustServerCertificate")).isEqualTo("true");
    }

    @Test
    void pollingRunsNoConnector() {
        DebeziumCapture capture = DebeziumCapture.builder().credentials("capture", "secret").build();
        assertThatThrownBy(() -> capture.dialectFor(CaptureMode.POLLING))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("outbox.capture.mode");
    }

    private CaptureSettings settings(CaptureMode mode, int port, CaptureFingerprint fingerprint) {
        return new CaptureSettings(true, mode, fingerprint, port, state.toString(), Duration.ofSeconds(30));
    }
}
