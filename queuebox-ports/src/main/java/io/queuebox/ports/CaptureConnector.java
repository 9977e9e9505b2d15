package io.queuebox.ports;

/**
 * One run of a change-data-capture connector (Debezium embedded, for example) for one capture identity.
 * The capture supervisor in the domain decides whether it may run (reconciliation, single owner) and
 * restarts it with backoff after a failure; the connector only streams.
 *
 * <p>Contract: {@link #start} returns promptly and streams on the connector's own threads. For every
 * insert or snapshot record of the outbox table it calls {@code events.wake(WakeReason.CAPTURE)};
 * updates, deletes and tombstones call nothing. It never publishes and never reads payloads for
 * delivery. When it stops by itself (an error, the slot gone, the database down) it calls
 * {@link Events#failed} exactly once and calls nothing afterwards. {@link #close} stops it without a
 * failure callback; it is idempotent.
 */
public interface CaptureConnector extends AutoCloseable {

    /** Starts streaming. Called at most once per instance. */
    void start(Events events);

    /** Stops streaming and releases threads and connections. */
    @Override
    void close();

    /** What a running connector reports. Implementations return at once. */
    interface Events extends WakeSource.WakeListener {

        /** The connector stopped by itself; {@code error} says why. */
        void failed(Throwable error);
    }

    /** Creates a connector for a capture identity, with its state in the identity's state directory. */
    @FunctionalInterface
    interface Factory {
        CaptureConnector create(CaptureSettings settings, CaptureIdentity identity);
    }
}
