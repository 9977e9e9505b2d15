package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureSourceReport;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresCaptureSourceInspectorTest {

    private static TestDatabase db;
    private static PostgresOutboxSettings settings;
    private static CaptureSourceInspector inspector;
    private static String walLevel;
    private static boolean columnLists;
    private final String suffix = UUID.randomUUID().toString().substring(0, 8).toLowerCase(Locale.ROOT);
    private final String slot = "qb_test_slot_" + suffix;
    private final String publication = "qb_test_pub_" + suffix;

    @BeforeAll
    static void schema() {
        db = TestDatabase.withFreshSchema("inspect");
        settings = db.settings().build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        db.execute("CREATE TABLE \"" + db.schema + "\".other_table (id int PRIMARY KEY)");
        inspector = PostgresOutbox.captureSourceInspector(db.dataSource);
        walLevel = Jdbi.create(db.dataSource).withHandle(h -> h.createQuery("SHOW wal_level").mapTo(String.class).one());
        columnLists = Jdbi.create(db.dataSource).withHandle(h -> h.createQuery("SHOW server_version_num")
                .mapTo(Integer.class).one()) >= 150000;
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void aMissingPublicationIsAProblemSayingHowToCreateIt() {
        CaptureSourceReport report = inspector.inspect(captureSettings());

        assertThat(report.slotExists()).isFalse();
        assertThat(report.retainedLogBytes()).isEmpty();
        assertThat(report.problems()).anySatisfy(problem -> assertThat(problem)
                .startsWith("publication '" + publication + "' does not exist")
                .contains("CREATE PUBLICATION \"" + publication + "\" FOR TABLE \"" + db.schema + "\".\"queuebox_outbox\""
                        + (columnLists ? " (event_id)" : "") + " WITH (publish = 'insert');"));
        assertWalLevelReportedAsItIs(report);
    }

    @Test
    void aPublicationThatDoesNotCoverTheOutboxIsAProblemSayingHowToAddIt() {
        db.execute("CREATE PUBLICATION " + publication + " FOR TABLE \"" + db.schema + "\".other_table");
        try {
            CaptureSourceReport report = inspector.inspect(captureSettings());
            assertThat(report.problems()).anySatisfy(problem -> assertThat(problem)
                    .startsWith("publication '" + publication + "' does not cover the outbox table "
                            + db.schema + ".queuebox_outbox")
                    .contains("ALTER PUBLICATION \"" + publication + "\" ADD TABLE"));
        } finally {
            db.execute("DROP PUBLICATION " + publication);
        }
    }

    @Test
    void aLogicalServerWithSlotAndCoveringPublicationIsReadyAndReportsRetainedWal() {
        if (!"logical".equals(walLevel)) {
            CaptureSourceReport report = inspector.inspect(captureSettings());
            assertThat(report.ready()).isFalse();
            assertWalLevelReportedAsItIs(report);
            return;
        }
        db.execute("CREATE PUBLICATION " + publication + " FOR TABLE \"" + db.schema + "\".queuebox_outbox"
                + " WITH (publish = 'insert')");
        db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
        try {
            CaptureSourceReport report = inspector.inspect(captureSettings());
            assertThat(report.problems()).isEmpty();
            assertThat(report.ready()).isTrue();
            assertThat(report.slotExists()).isTrue();
            assertThat(report.retainedLogBytes()).isPresent();
            assertThat(report.retainedLogBytes().getAsLong()).isNotNegative();
        } finally {
            db.execute("SELECT pg_drop_replication_slot('" + slot + "')");
            db.execute("DROP PUBLICATION " + publication);
        }
    }

    @Test
    void aPublicationOfTheEventIdAloneCoversTheOutbox() {
        Assumptions.assumeTrue(columnLists, "publication column lists came with PostgreSQL 15");
        CaptureSourceReport report = inspectWithPublication("FOR TABLE \"" + db.schema + "\".queuebox_outbox (event_id)"
                + " WITH (publish = 'insert')");

        assertThat(report.problems()).noneSatisfy(problem -> assertThat(problem).contains("publication"));
    }

    @Test
    void aPublicationWhoseColumnsLeaveTheEventIdOutIsAProblemSayingHowToPublishIt() {
        Assumptions.assumeTrue(columnLists, "publication column lists came with PostgreSQL 15");
        CaptureSourceReport report = inspectWithPublication("FOR TABLE \"" + db.schema + "\".queuebox_outbox (seq, payload)"
                + " WITH (publish = 'insert')");

        assertThat(report.problems()).contains("publication '" + publication + "' publishes columns of the"
                + " outbox table " + db.schema + ".queuebox_outbox but not event_id, which capture reads: run ALTER"
                + " PUBLICATION \"" + publication + "\" DROP TABLE \"" + db.schema + "\".\"queuebox_outbox\"; ALTER"
                + " PUBLICATION \"" + publication + "\" ADD TABLE \"" + db.schema + "\".\"queuebox_outbox\" (event_id);");
    }

    @Test
    void aPublicationForAllTablesCoversTheOutbox() {
        CaptureSourceReport report = inspectWithPublication("FOR ALL TABLES");

        assertThat(report.problems()).noneSatisfy(problem -> assertThat(problem).contains("publication"));
    }

    /** The report on this test's publication, created as {@code definition} says and dropped after. */
    private CaptureSourceReport inspectWithPublication(String definition) {
        db.execute("CREATE PUBLICATION " + publication + " " + definition);
        try {
            return inspector.inspect(captureSettings());
        } finally {
            db.execute("DROP PUBLICATION " + publication);
        }
    }

    private static void assertWalLevelReportedAsItIs(CaptureSourceReport report) {
        if ("logical".equals(walLevel)) {
            assertThat(report.problems()).noneSatisfy(problem -> assertThat(problem).contains("wal_level"));
        } else {
            assertThat(report.problems()).anySatisfy(problem -> assertThat(problem)
                    .startsWith("wal_level is '" + walLevel + "' but capture needs 'logical'")
                    .contains("ALTER SYSTEM SET wal_level = logical"));
        }
    }

    private CaptureSettings captureSettings() {
        return new CaptureSettings(true, CaptureMode.POSTGRES_LOGICAL,
                new CaptureFingerprint(slot, publication, db.schema, "queuebox_outbox", "127.0.0.1", "test"),
                5432, "/tmp/unused", Duration.ofSeconds(30));
    }
}
