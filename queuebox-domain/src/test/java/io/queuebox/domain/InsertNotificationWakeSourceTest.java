package io.queuebox.domain;

import static io.queuebox.domain.Fixtures.anEventFor;
import static io.queuebox.domain.Fixtures.order;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.Health;
import io.queuebox.ports.InsertNotifications;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class InsertNotificationWakeSourceTest {

    private static final Duration SOON = Duration.ofSeconds(5);

    private final FakeNotifications database = new FakeNotifications();
    private final List<WakeReason> wakes = new CopyOnWriteArrayList<>();
    private final InsertNotificationWakeSource source = new InsertNotificationWakeSource(database);
    private DeliveryEngine engine;

    @AfterEach
    void closeAll() {
        source.close();
        if (engine != null) {
            engine.stop(Duration.ofSeconds(2));
        }
    }

    @Test
    void onceListeningItIsUpAndWakesDeliveryForTheTimeNobodyListenedAndForEachNotification() {
        assertThat(source.health().isUp()).as("before start").isFalse();

        source.start(wakes::add);

        await().atMost(SOON).until(() -> source.health().isUp());
        assertThat(source.health().detail()).isEqualTo("LISTEN fake");
        await().atMost(SOON).until(() -> wakes.contains(WakeReason.NOTIFY_RESTART));
        database.last().notifications.add(3);
        await().atMost(SOON).until(() -> wakes.contains(WakeReason.NOTIFY));
        assertThat(source.notificationsReceived()).isEqualTo(3);
        assertThat(source.health().details()).containsEntry("sessions", 1L).containsEntry("notifications", 3L);
    }

    @Test
    void notificationsThatNameTheirRowsWakeForThoseRowsAndAnyThatDoesNotWakesPlainly() {
        List<List<UUID>> named = new CopyOnWriteArrayList<>();
        source.start(new WakeSource.WakeListener() {
            @Override
            public void wake(WakeReason reason) {
                wakes.add(reason);
            }

            @Override
            public void wakeFor(WakeReason reason, Collection<UUID> eventIds) {
                assertThat(reason).isEqualTo(WakeReason.NOTIFY);
                named.add(List.copyOf(eventIds));
            }
        });
        await().atMost(SOON).until(() -> wakes.contains(WakeReason.NOTIFY_RESTART));
        UUID first = UUID.randomUUID();
        UUID second = UUID.randomUUID();

        database.last().arrivals.add(new InsertNotifications.Arrivals(2, List.of(first, second), true));
        await().atMost(SOON).until(() -> named.size() == 1);
        database.last().arrivals.add(new InsertNotifications.Arrivals(2, List.of(first), false));
        await().atMost(SOON).until(() -> wakes.contains(WakeReason.NOTIFY));

        assertThat(named).containsExactly(List.of(first, second));
        assertThat(source.notificationsReceived()).isEqualTo(4);
    }

    @Test
    void aLostSessionIsReportedDownWakesDeliveryAndIsListenedAgainAfterTheBackoff() {
        source.start(wakes::add);
        await().atMost(SOON).until(() -> source.health().isUp());
        int restartWakes = count(WakeReason.NOTIFY_RESTART);

        database.last().notifications.add(FakeNotifications.LOST);

        await().atMost(SOON).until(() -> !source.health().isUp());
        Health down = source.health();
        assertThat(down.detail()).contains("session lost", "terminating connection", "retrying in 1000 ms",
                "delivery polls meanwhile");
        assertThat(down.details()).containsEntry("consecutiveFailures", 1);
        assertThat(database.last().closed).as("the lost session is closed").isTrue();
        assertThat(count(WakeReason.NOTIFY_RESTART)).as("idle workers switch to the fallback interval at once")
                .isGreaterThan(restartWakes);

        await().atMost(SOON).until(() -> source.health().isUp());
        assertThat(database.subscriptions).hasSize(2);
        assertThat(count(WakeReason.NOTIFY_RESTART)).as("the new session wakes delivery too")
                .isGreaterThanOrEqualTo(restartWakes + 2);
        assertThat(source.health().details()).containsEntry("consecutiveFailures", 0);
    }

    @Test
    void aListenThatFailsIsRetriedAndNothingIsThrownIntoTheEngine() {
        database.failingListens.set(1);

        source.start(wakes::add);

        await().atMost(SOON).until(() -> source.health().detail().contains("cannot listen"));
        assertThat(source.health().isUp()).isFalse();
        assertThat(source.health().detail()).contains("connection refused");
        assertThat(wakes).contains(WakeReason.NOTIFY_RESTART);
        await().atMost(SOON).until(() -> source.health().isUp());
        assertThat(database.listenCalls.get()).isEqualTo(2);
    }

    @Test
    void closeEndsTheSessionAndNoWakeFollows() {
        source.start(wakes::add);
        await().atMost(SOON).until(() -> source.health().isUp());

        source.close();

        assertThat(database.last().closed).isTrue();
        assertThat(source.health().isUp()).isFalse();
        assertThat(source.health().detail()).isEqualTo("insert listener closed");
        int before = wakes.size();
        database.last().notifications.add(1);
        assertThat(wakes).hasSize(before);
        assertThatThrownBy(() -> source.start(wakes::add)).isInstanceOf(IllegalStateException.class);
        source.close(); // idempotent
    }

    @Test
    void aNotificationMakesTheEngineClaimAtOnceThoughItsIntervalIsLong() {
        FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
        engine = DeliveryEngine.builder().store(store).publisher(new FakePublisher())
                .settings(DeliverySettings.builder().wakeInterval(Duration.ofSeconds(30))
                        .fallbackWakeInterval(Duration.ofSeconds(30)).purgeEnabled(false).build())
                .wakeSource(source).build();
        engine.start();
        await().atMost(SOON).until(() -> source.health().isUp() && store.claimCalls.get() >= 1);

        store.add(anEventFor(order("a")));
        database.last().notifications.add(1);

        await().atMost(Duration.ofSeconds(2)).until(() -> store.count(RowStatus.SENT) == 1);
    }

    @Test
    void whileTheListenerCannotListenTheEnginePollsAtTheFallbackInterval() {
        database.failingListens.set(Integer.MAX_VALUE);
        FakeOutboxStore store = new FakeOutboxStore(Clock.systemUTC());
        engine = DeliveryEngine.builder().store(store).publisher(new FakePublisher())
                .settings(DeliverySettings.builder().wakeInterval(Duration.ofSeconds(30))
                        .fallbackWakeInterval(Duration.ofMillis(100)).purgeEnabled(false).build())
                .wakeSource(source).build();
        engine.start();
        await().atMost(SOON).until(() -> source.health().detail().contains("cannot listen"));

        store.add(anEventFor(order("a")));

        await().atMost(Duration.ofSeconds(2)).until(() -> store.count(RowStatus.SENT) == 1);
    }

    private int count(WakeReason reason) {
        return (int) wakes.stream().filter(reason::equals).count();
    }

    /** A database that listens: each subscription answers what the test puts in its queue. */
    private static final class FakeNotifications implements InsertNotifications {
        static final int LOST = -1;

        final List<FakeSubscription> subscriptions = new CopyOnWriteArrayList<>();
        final AtomicInteger failingListens = new AtomicInteger();
        final AtomicInteger listenCalls = new AtomicInteger();

        @Override
        public Subscription listen() {
            listenCalls.incrementAndGet();
            if (failingListens.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new IllegalStateException("connection refused");
            }
            FakeSubscription subscription = new FakeSubscription();
            subscriptions.add(subscription);
            return subscription;
        }

        @Override
        public String description() {
            return "LISTEN fake";
        }

        FakeSubscription last() {
            await().atMost(SOON).until(() -> !subscriptions.isEmpty());
            return subscriptions.get(subscriptions.size() - 1);
        }
    }

    private static final class FakeSubscription implements InsertNotifications.Subscription {
        final BlockingQueue<Integer> notifications = new LinkedBlockingQueue<>();
        /** Arrivals that name rows, answered before any count in {@link #notifications}. */
        final BlockingQueue<InsertNotifications.Arrivals> arrivals = new LinkedBlockingQueue<>();
        volatile boolean closed;

        @Override
        public InsertNotifications.Arrivals awaitArrivals(Duration timeout) {
            InsertNotifications.Arrivals next = arrivals.poll();
            return next != null ? next : InsertNotifications.Subscription.super.awaitArrivals(timeout);
        }

        @Override
        public int await(Duration timeout) {
            if (closed) {
                throw new IllegalStateException("closed");
            }
            try {
                Integer next = notifications.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
                if (next == null) {
                    return 0;
                }
                if (next == FakeNotifications.LOST) {
                    throw new IllegalStateException("FATAL: terminating connection due to administrator command");
                }
                return next;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 0;
            }
        }

        @Override
        public void close() {
            closed = true;
        }
    }
}
