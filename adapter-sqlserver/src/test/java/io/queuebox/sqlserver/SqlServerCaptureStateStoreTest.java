package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Testcontainers;

import static org.awaitility.Awaitility.await;

/** The queuebox_capture_state table on real SQL Server. Skipped without Docker. */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerCaptureStateStoreTest {

    private static final CaptureFingerprint FINGERPRINT =
            new CaptureFingerprint("dbo_queuebox_outbox", "", "dbo", "queuebox_outbox", "localhost", "shop");

    private static TestDatabase db;
    private static CaptureStateStore states;

    @BeforeAll
    static void schema() {
        db = TestDatabase.create("state");
        SqlServerOutboxSettings settings = db.settings().build();
        SqlServerOutbox.createSchema(db.dataSource, settings);
        states = SqlServerOutbox.captureStateStore(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void aFirstStartInsertsAndALaterStartKeepsTheFirstRunTime() {
        CaptureIdentity identity = CaptureIdentity.random();
        states.recordStart(identity, CaptureMode.SQLSERVER_CDC, FINGERPRINT);
        CaptureStateRecord first = states.find(identity).orElseThrow();
        assertThat(first.mode()).isEqualTo(CaptureMode.SQLSERVER_CDC);
        assertThat(first.fingerprint()).isEqualTo(FINGERPRINT);
        assertThat(first.lastRunAt()).isEqualTo(first.firstRunAt());

        CaptureFingerprint moved = new CaptureFingerprint("dbo_queuebox_outbox", "", "dbo", "queuebox_outbox",
                "replica", "shop");
        await().until(() -> {
            states.recordStart(identity, CaptureMode.SQLSERVER_CDC, moved);
            return states.find(identity).orElseThrow().lastRunAt().isAfter(first.firstRunAt());
        });
        CaptureStateRecord later = states.find(identity).orElseThrow();
        assertThat(later.firstRunAt()).isEqualTo(first.firstRunAt());
        assertThat(later.fingerprint()).isEqualTo(moved);
        assertThat(states.findAll()).extracting(CaptureStateRecord::identity).contains(identity);
    }

    @Test
    void statusIsRecordedAndAForgottenIdentityIsGone() {
        CaptureIdentity identity = CaptureIdentity.random();
        states.recordStart(identity, CaptureMode.SQLSERVER_CDC, FINGERPRINT);
        states.recordStatus(identity, "FAULTED", "capture instance dropped");
        states.recordStatus(identity, "RUNNING", null);
        assertThat(db.count("SELECT count(*) FROM [dbo].[queuebox_capture_state] WHERE [identity] = '"
                + identity.value() + "' AND state = 'RUNNING' AND fault_reason IS NULL")).isEqualTo(1);

        assertThat(states.forget(identity)).isTrue();
        assertThat(states.forget(identity)).isFalse();
        assertThat(states.find(identity)).isEmpty();
    }
}
