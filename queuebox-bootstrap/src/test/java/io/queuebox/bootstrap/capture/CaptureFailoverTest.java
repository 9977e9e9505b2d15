package io.queuebox.bootstrap.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.bootstrap.cli.Cli;
import io.queuebox.domain.CaptureStatus.State;
import io.queuebox.domain.CaptureSupervisor;
import io.queuebox.domain.DeliveryEngine;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.postgres.PostgresOutbox;
import io.queuebox.postgres.PostgresOutboxSettings;
import io.queuebox.testkit.publisher.RecordingPublisher;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The manual failover of docs/how-to/capture-changes.md, against a real PostgreSQL with real Debezium: stop the
 * owner, recreate the state directory with {@code queuebox capture adopt}, start the new owner with the same
 * identity. Nothing is lost, the new owner streams as the old identity from the same slot, and no fault is seen.
 */
class CaptureFailoverTest {

    /** Delivery's own timer is far away: an event delivered within seconds was woken by capture. */
    private static final Duration LONG_TIMER = Duration.ofSeconds(120);

    @TempDir
    Path volumes;

    private CaptureTestBed bed;

    @BeforeEach
    void createDatabase() throws Exception {
        bed = new CaptureTestBed();
    }

    @AfterEach
    void dropDatabase() throws Exception {
        bed.close();
    }

    @Test
    void captureMovesToANewOwnerThroughAdoptWithoutLosingAnEvent() throws Exception {
        Path volumeOfA = volumes.resolve("owner-a");
        Path volumeOfB = volumes.resolve("owner-b");
        RecordingPublisher publisher = RecordingPublisher.acking();

        // Owner A streams with state directory D1.
        CaptureSupervisor ownerA = bed.supervisor(bed.settings(volumeOfA));
        DeliveryEngine deliveryOfA = bed.engine(ownerA, publisher, LONG_TIMER);
        awaitState(ownerA, State.RUNNING);
        await().atMost(Duration.ofSeconds(60)).until(bed::slotExists);
        await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(volumeOfA.resolve("offsets.dat")));
        List<OutboxEvent> beforeTheMove = bed.write(5);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(beforeTheMove)));
        CaptureIdentity identity = bed.identityIn(volumeOfA);

        // 1. Stop the current owner (delivery and capture: the whole process).
        deliveryOfA.close();
        ownerA.close();
        List<OutboxEvent> duringTheGap = bed.write(5);

        // 2. Recreate the state directory D2 for A's identity.
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Cli.execute(Map.of("QUEUEBOX_DATABASE_URL", bed.url(), "QUEUEBOX_BROKER_TYPE", "rabbitmq",
                        "QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true", "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical",
                        "QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY", volumeOfB.toString(),
                        "QUEUEBOX_OUTBOX_CAPTURE_SLOT", bed.slot, "QUEUEBOX_OUTBOX_CAPTURE_PUBLICATION", "qb_pub"),
                new PrintWriter(out, true), new PrintWriter(err, true), "capture", "adopt", "--identity", identity.value());
        assertThat(code).as(err.toString()).isZero();
        assertThat(out.toString()).contains("identity file written for " + identity);
        assertThat(bed.identityIn(volumeOfB)).isEqualTo(identity);
        assertThat(Files.exists(volumeOfB.resolve("offsets.dat"))).as("only the identity, no offsets").isFalse();
        List<OutboxEvent> afterTheAdopt = bed.write(5);

        // 3. Start the new owner on D2.
        int connectorsBefore = bed.connectorsCreated.get();
        CaptureSupervisor ownerB = bed.supervisor(bed.settings(volumeOfB));
        bed.engine(ownerB, publisher, LONG_TIMER);
        awaitState(ownerB, State.RUNNING);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(duringTheGap))
                && publisher.deliveredIds().containsAll(ids(afterTheAdopt)));
        // With only the identity (no offsets) the connector reads the existing slot from its confirmed position:
        // the inserts written while nobody streamed reach it as capture events (each one a wake-up).
        await().atMost(Duration.ofSeconds(30)).until(() -> bed.lastDebezium.statistics().wakeEvents() >= 10);
        System.out.printf("[capture] the new owner's connector saw %d capture events; 10 were written while nobody"
                + " streamed%n", bed.lastDebezium.statistics().wakeEvents());
        List<OutboxEvent> afterTheMove = bed.write(5);
        await().atMost(Duration.ofSeconds(15)).until(() -> publisher.deliveredIds().containsAll(ids(afterTheMove)));

        assertThat(ownerB.status().state()).isEqualTo(State.RUNNING);
        assertThat(ownerB.status().identity()).as("the new owner runs as the old identity").contains(identity);
        assertThat(ownerB.status().fault()).isEmpty();
        assertThat(bed.connectorsCreated.get() - connectorsBefore).as("started once, never restarted").isEqualTo(1);
        CaptureStateStore rows = PostgresOutbox.captureStateStore(bed.dataSource, PostgresOutboxSettings.defaults());
        assertThat(rows.findAll()).extracting(CaptureStateRecord::identity).as("no fresh identity")
                .containsExactly(identity);
        assertThat(rows.recordedStatus(identity)).hasValueSatisfying(status -> {
            assertThat(status.state()).isEqualTo("RUNNING");
            assertThat(status.faultReason()).isNull();
        });
        assertThat(publisher.deliveredIds()).containsAll(ids(beforeTheMove)).containsAll(ids(duringTheGap))
                .containsAll(ids(afterTheAdopt)).containsAll(ids(afterTheMove));
        assertThat(bed.slotExists()).isTrue();
    }

    private static void awaitState(CaptureSupervisor supervisor, State state) {
        await().atMost(Duration.ofSeconds(60)).until(() -> supervisor.status().state() == state
                || supervisor.status().state() == State.FAULT);
        assertThat(supervisor.status().state()).as(supervisor.status().message()).isEqualTo(state);
    }

    private static List<UUID> ids(List<OutboxEvent> events) {
        return events.stream().map(OutboxEvent::eventId).toList();
    }
}
