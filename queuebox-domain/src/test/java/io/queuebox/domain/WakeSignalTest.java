package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.queuebox.ports.WakeReason;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class WakeSignalTest {

    private static final Duration LONG = Duration.ofSeconds(30);
    private static final Duration TEST_LIMIT = Duration.ofSeconds(3);

    private static WakeSchedule.Wake intervalOnly(Duration left) {
        return WakeSchedule.next(left, Optional.empty(), Optional.empty(), Optional.empty(), false);
    }

    @Test
    void aWakeUpBeforeTheWaitEndsItAtOnceWithItsReason() {
        WakeSignal signal = new WakeSignal();
        long seen = signal.wakes();
        signal.wake(WakeReason.CAPTURE);

        WakeSignal.Woken woken = assertTimeoutPreemptively(TEST_LIMIT,
                () -> signal.await(seen, LONG, WakeSignalTest::intervalOnly));

        assertThat(woken.reason()).isEqualTo(WakeReason.CAPTURE);
        assertThat(woken.wakesSeen()).isEqualTo(seen + 1);
    }

    @Test
    void wakeUpsCoalesceIntoOne() {
        WakeSignal signal = new WakeSignal();
        long seen = signal.wakes();
        for (int i = 0; i < 50; i++) {
            signal.wake(WakeReason.CAPTURE);
        }
        WakeSignal.Woken first = signal.await(seen, LONG, WakeSignalTest::intervalOnly);

        WakeSignal.Woken second = assertTimeoutPreemptively(TEST_LIMIT,
                () -> signal.await(first.wakesSeen(), Duration.ofMillis(20), WakeSignalTest::intervalOnly));

        assertThat(second.reason()).as("nothing left pending: the second wait runs to its interval")
                .isEqualTo(WakeReason.INTERVAL);
    }

    @Test
    void theIntervalEndsAnIdleWait() {
        WakeSignal signal = new WakeSignal();

        WakeSignal.Woken woken = assertTimeoutPreemptively(TEST_LIMIT,
                () -> signal.await(signal.wakes(), Duration.ofMillis(20), WakeSignalTest::intervalOnly));

        assertThat(woken.reason()).isEqualTo(WakeReason.INTERVAL);
    }

    @Test
    void aWakeUpFromAnotherThreadEndsTheWait() throws InterruptedException {
        WakeSignal signal = new WakeSignal();
        AtomicReference<WakeSignal.Woken> result = new AtomicReference<>();
        long seen = signal.wakes();
        Thread waiter = new Thread(() -> result.set(signal.await(seen, LONG, WakeSignalTest::intervalOnly)));
        waiter.start();

        signal.wake(WakeReason.EXTERNAL);
        waiter.join(TEST_LIMIT.toMillis());

        assertThat(result.get().reason()).isEqualTo(WakeReason.EXTERNAL);
    }

    @Test
    void shutdownEndsWaitsAndPauses() {
        WakeSignal signal = new WakeSignal();
        signal.shutdown();

        assertThat(assertTimeoutPreemptively(TEST_LIMIT,
                () -> signal.await(signal.wakes(), LONG, WakeSignalTest::intervalOnly)).reason())
                .isEqualTo(WakeReason.SHUTDOWN);
        assertThat(assertTimeoutPreemptively(TEST_LIMIT, () -> signal.pause(LONG))).isFalse();
        assertThat(signal.isShutdown()).isTrue();
    }

    @Test
    void aPauseIgnoresWakeUps() {
        WakeSignal signal = new WakeSignal();
        signal.wake(WakeReason.CAPTURE);

        assertThat(assertTimeoutPreemptively(TEST_LIMIT, () -> signal.pause(Duration.ofMillis(20)))).isTrue();
    }

    @Test
    void aScheduleChangeMakesTheWaiterReplanWithoutRestartingTheInterval() throws InterruptedException {
        WakeSignal signal = new WakeSignal();
        AtomicReference<Optional<Duration>> deadline = new AtomicReference<>(Optional.empty());
        AtomicReference<WakeSignal.Woken> result = new AtomicReference<>();
        Thread waiter = new Thread(() -> result.set(signal.await(signal.wakes(), LONG,
                left -> WakeSchedule.next(left, deadline.get(), Optional.empty(), Optional.empty(), false))));
        waiter.start();

        deadline.set(Optional.of(Duration.ofMillis(10)));
        signal.scheduleChanged();
        waiter.join(TEST_LIMIT.toMillis());

        assertThat(result.get().reason()).isEqualTo(WakeReason.DEADLINE);
    }
}
