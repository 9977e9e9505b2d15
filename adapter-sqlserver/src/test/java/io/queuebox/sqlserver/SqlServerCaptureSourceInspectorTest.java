package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureSourceReport;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * CDC on the database and the table, and the Agent, on real SQL Server (the container runs the Agent;
 * an explicit server needs a sysadmin account). Skipped without Docker.
 */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerCaptureSourceInspectorTest {

    private static TestDatabase db;

    @BeforeAll
    static void database() {
        db = TestDatabase.create("cdc");
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void eachMissingPieceIsASentenceUntilCaptureCanStart() {
        CaptureSourceInspector inspector = SqlServerOutbox.captureSourceInspector(db.dataSource);
        CaptureSettings settings = new CaptureSettings(true, CaptureMode.SQLSERVER_CDC,
                new CaptureFingerprint("dbo_queuebox_outbox", "", "dbo", "queuebox_outbox", "localhost", db.name),
                1433, "state", Duration.ofSeconds(30));

        CaptureSourceReport nothing = inspector.inspect(settings);
        assertThat(nothing.slotExists()).isTrue();
        assertThat(nothing.retainedLogBytes()).isEmpty();
        assertThat(nothing.problems()).anySatisfy(p -> assertThat(p).contains("sys.sp_cdc_enable_db"))
                .anySatisfy(p -> assertThat(p).contains("does not exist"));

        db.execute("EXEC sys.sp_cdc_enable_db");
        SqlServerOutbox.createSchema(db.dataSource, SqlServerOutboxSettings.defaults());
        CaptureSourceReport tableNotTracked = inspector.inspect(settings);
        assertThat(tableNotTracked.problems()).singleElement().satisfies(p -> assertThat(p)
                .contains("sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'queuebox_outbox'"));

        db.execute("EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'queuebox_outbox',"
                + " @role_name = NULL, @capture_instance = N'dbo_queuebox_outbox'");
        CaptureSourceReport ready = inspector.inspect(settings);
        assertThat(ready.problems()).isEmpty();
        assertThat(ready.ready()).isTrue();
    }
}
