package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresCaptureStateStoreTest {

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static CaptureStateStore store;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("state");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.captureStateStore(db.dataSource, settings);
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void recordsAFirstStartThenALaterStartThenStatusThenForgets() {
        CaptureIdentity identity = CaptureIdentity.random();
        CaptureFingerprint first = new CaptureFingerprint("slot_a", "pub_a", db.schema, "queuebox_outbox", "db1", "test");
        CaptureFingerprint changed = new CaptureFingerprint("slot_b", "pub_a", db.schema, "queuebox_outbox", "db1", "test");

        store.recordStart(identity, CaptureMode.POSTGRES_LOGICAL, first);
        CaptureStateRecord recorded = store.find(identity).orElseThrow();
        assertThat(recorded.fingerprint()).isEqualTo(first);
        assertThat(recorded.mode()).isEqualTo(CaptureMode.POSTGRES_LOGICAL);
        assertThat(recorded.firstRunAt()).isEqualTo(recorded.lastRunAt());

        store.recordStart(identity, CaptureMode.POSTGRES_LOGICAL, changed);
        CaptureStateRecord again = store.find(identity).orElseThrow();
        assertThat(again.firstRunAt()).isEqualTo(recorded.firstRunAt());
        assertThat(again.lastRunAt()).isAfter(recorded.lastRunAt());
        assertThat(again.fingerprint()).isEqualTo(changed);

        store.recordStatus(identity, "faulted", "slot gone while state remains");
        String reason = Jdbi.create(db.dataSource).withHandle(h -> h.createQuery("SELECT fault_reason FROM "
                + settings.qualifiedCaptureStateTable() + " WHERE identity = :id").bind("id", identity.value())
                .mapTo(String.class).one());
        assertThat(reason).isEqualTo("slot gone while state remains");
        assertThat(store.recordedStatus(identity)).hasValueSatisfying(status -> {
            assertThat(status.state()).isEqualTo("faulted");
            assertThat(status.faultReason()).isEqualTo("slot gone while state remains");
        });
        assertThat(store.recordedStatus(new CaptureIdentity("never-ran"))).isEmpty();

        assertThat(store.findAll()).extracting(CaptureStateRecord::identity).contains(identity);
        assertThat(store.forget(identity)).isTrue();
        assertThat(store.forget(identity)).isFalse();
        assertThat(store.find(identity)).isEmpty();
    }
}
