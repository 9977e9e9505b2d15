package io.queuebox.rabbitmq;

import com.rabbitmq.client.Connection;
import java.lang.reflect.Field;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicReference;

/** What the review tests reach inside a publisher: its connection, and its socket closed as the watchdog closes it. */
final class PublisherInternals {

    private PublisherInternals() {
    }

    static Connection connection(RabbitMqMessagePublisher publisher) throws ReflectiveOperationException {
        return (Connection) field(RabbitMqMessagePublisher.class, "connection").get(publisher);
    }

    /** Closes the connection's current socket without a goodbye, as the write watchdog does. */
    @SuppressWarnings("unchecked")
    static void abandonSocket(RabbitMqMessagePublisher publisher) throws Exception {
        Object watchdog = field(RabbitMqMessagePublisher.class, "watchdog").get(publisher);
        Socket socket = ((AtomicReference<Socket>) field(WriteWatchdog.class, "socket").get(watchdog)).get();
        socket.setSoLinger(true, 0);
        socket.close();
    }

    private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
