package io.queuebox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import java.lang.reflect.Proxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A channel open that fails with an Error (here a StackOverflowError; an OutOfMemoryError "unable to create native
 * thread" from the RPC pool's execute is the likely one once RPC threads pile up) leaves borrow without giving its
 * permit back: borrow releases on IOException and RuntimeException only. With a pool of 1, the publisher then
 * answers "no channel free" for good.
 */
class ChannelPoolPermitReviewTest {

    @Test
    void anErrorOpeningAChannelGivesItsPlaceBack() throws Exception {
        try (WriteWatchdog watchdog = new WriteWatchdog(250); BoundedRpcs rpcs = new BoundedRpcs(watchdog, 1000)) {
            ChannelPool pool = new ChannelPool(1, rpcs);
            Connection failing = connection(() -> {
                throw new StackOverflowError("deep in the client");
            });
            assertThatThrownBy(() -> pool.borrow(failing, deadlineIn(Duration.ofSeconds(1))))
                    .isInstanceOf(StackOverflowError.class);

            Connection working = connection(ChannelPoolPermitReviewTest::channel);
            assertThat(pool.borrow(working, deadlineIn(Duration.ofMillis(500))))
                    .as("a channel for the next call, the only place being free again").isNotNull();
        }
    }

    private static long deadlineIn(Duration duration) {
        return System.nanoTime() + duration.toNanos();
    }

    private static Connection connection(java.util.function.Supplier<Channel> createChannel) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "createChannel" -> createChannel.get();
                    case "isOpen" -> true;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    private static Channel channel() {
        return (Channel) Proxy.newProxyInstance(Channel.class.getClassLoader(), new Class<?>[] {Channel.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "isOpen" -> true;
                    case "confirmSelect" -> null;
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> null;
                });
    }
}
