package io.queuebox.testkit.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.Health;
import io.queuebox.ports.WakeReason;
import io.queuebox.testkit.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class CaptureFakesTest {

    private static final CaptureIdentity IDENTITY = new CaptureIdentity("relay-a");
    private static final CaptureFingerprint FINGERPRINT =
            new CaptureFingerprint("queuebox_slot", "queuebox_pub", "public", "outbox", "db1", "shop");

    @Nested
    class StateStore {
        private final MutableClock clock = MutableClock.create();
        private final InMemoryCaptureStateStore store = new InMemoryCaptureStateStore(clock);

        @Test
        void aFirstStartInsertsTheIdentityAndLaterStartsMoveOnlyTheLastRun() {
            store.recordStart(IDENTITY, CaptureMode.POSTGRES_LOGICAL, FINGERPRINT);
            Instant first = clock.instant();
            clock.advance(Duration.ofHours(1));
            CaptureFingerprint changed = new CaptureFingerprint("other", "queuebox_pub", "public", "outbox", "db1", "shop");
            store.recordStart(IDENTITY, CaptureMode.POSTGRES_LOGICAL, changed);

            assertThat(store.find(IDENTITY)).contains(new CaptureStateRecord(IDENTITY, CaptureMode.POSTGRES_LOGICAL,
                    FINGERPRINT, first, clock.instant()));
        }

        @Test
        void forgetRemovesTheIdentityOnce() {
            store.recordStart(IDENTITY, CaptureMode.POSTGRES_LOGICAL, FINGERPRINT);

            assertThat(store.forget(IDENTITY)).isTrue();
            assertThat(store.forget(IDENTITY)).isFalse();
            assertThat(store.findAll()).isEmpty();
        }

        @Test
        void statusIsKeptForKnownIdentitiesOnly() {
            store.recordStatus(IDENTITY, "FAULT", "ignored: not recorded yet");
            store.recordStart(IDENTITY, CaptureMode.SQLSERVER_CDC, FINGERPRINT);
            store.recordStatus(IDENTITY, "FAULT", "settings changed: slot");

            assertThat(store.statusOf(IDENTITY)).contains(
                    new InMemoryCaptureStateStore.Status("FAULT", "settings changed: slot"));
        }
    }

    @Nested
    class StateDirectory {

        @Test
        void anEmptyDirectoryHoldsNothing() {
            InMemoryCaptureStateDirectory directory = InMemoryCaptureStateDirectory.empty();

            assertThat(directory.readIdentity()).isEmpty();
            assertThat(directory.hasOffsets()).isFalse();
            directory.checkWritable();
        }

        @Test
        void aDirectoryLeftByARunHoldsItsIdentityAndOffsetsUntilCleared() {
            InMemoryCaptureStateDirectory directory = InMemoryCaptureStateDirectory.leftBy(IDENTITY);

            assertThat(directory.readIdentity()).contains(IDENTITY);
            assertThat(directory.hasOffsets()).isTrue();
            directory.clear();
            assertThat(directory.readIdentity()).isEmpty();
            assertThat(directory.hasOffsets()).isFalse();
        }

        @Test
        void anUnwritableDirectoryNamesItsLocation() {
            InMemoryCaptureStateDirectory directory = InMemoryCaptureStateDirectory.empty();
            directory.makeUnwritable();

            assertThatThrownBy(directory::checkWritable).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(directory.location());
            assertThatThrownBy(() -> directory.writeIdentity(IDENTITY)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Nested
    class Lock {
        private final InMemoryCaptureLock database = new InMemoryCaptureLock();

        @Test
        void twoSessionsContendingSeeOneOwner() {
            Optional<CaptureLock.Held> first = database.tryAcquire(IDENTITY);
            Optional<CaptureLock.Held> second = database.tryAcquire(IDENTITY);

            assertThat(first).hasValueSatisfying(held -> assertThat(held.isHeld()).isTrue());
            assertThat(second).isEmpty();
            assertThat(database.tryAcquire(new CaptureIdentity("relay-b"))).isPresent();
        }

        @Test
        void closingReleasesTheLockForTheNextSession() {
            CaptureLock.Held first = database.tryAcquire(IDENTITY).orElseThrow();

            first.close();

            assertThat(first.isHeld()).isFalse();
            assertThat(database.tryAcquire(IDENTITY)).isPresent();
        }

        @Test
        void aLostSessionLosesTheLockAndItsLateCloseDoesNotFreeTheNewOwner() {
            CaptureLock.Held first = database.tryAcquire(IDENTITY).orElseThrow();

            assertThat(database.loseSession(IDENTITY)).isTrue();
            CaptureLock.Held second = database.tryAcquire(IDENTITY).orElseThrow();
            first.close();

            assertThat(first.isHeld()).isFalse();
            assertThat(second.isHeld()).isTrue();
            assertThat(database.isLocked(IDENTITY)).isTrue();
        }
    }

    @Nested
    class WakeSource {

        @Test
        void wakeCallsTheListenerOnlyWhileStartedAndOpen() {
            ManualWakeSource source = new ManualWakeSource();
            List<WakeReason> heard = new ArrayList<>();

            assertThat(source.wake()).as("not started: the wake-up is lost").isFalse();
            source.start(heard::add);
            assertThat(source.wake()).isTrue();
            source.wake(WakeReason.CAPTURE_RESTART);
            source.close();
            source.close();
            assertThat(source.wake()).isFalse();

            assertThat(heard).containsExactly(WakeReason.CAPTURE, WakeReason.CAPTURE_RESTART);
            assertThat(source.wakeUps()).isEqualTo(2);
        }

        @Test
        void aWakeUpThatNamesItsRowReachesTheListenerWithTheRow() {
            ManualWakeSource source = new ManualWakeSource();
            java.util.UUID row = java.util.UUID.randomUUID();
            List<java.util.UUID> named = new ArrayList<>();
            assertThat(source.wakeFor(row)).as("not started: the wake-up is lost").isFalse();
            source.start(new io.queuebox.ports.WakeSource.WakeListener() {
                @Override
                public void wake(WakeReason reason) {
                }

                @Override
                public void wakeFor(WakeReason reason, java.util.UUID eventId) {
                    named.add(eventId);
                }
            });

            assertThat(source.wakeFor(row)).isTrue();

            assertThat(named).containsExactly(row);
            assertThat(source.wakeUps()).isEqualTo(1);
        }

        @Test
        void startsOnceAndReportsTheHealthItIsGiven() {
            ManualWakeSource source = new ManualWakeSource();
            source.start(reason -> { });

            assertThatThrownBy(() -> source.start(reason -> { })).isInstanceOf(IllegalStateException.class);
            source.reportHealth(Health.down("connector failed: slot gone"));
            assertThat(source.health().isUp()).isFalse();
        }
    }
}
