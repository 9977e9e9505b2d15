package io.queuebox.embed;

import io.micrometer.core.instrument.MeterRegistry;
import io.queuebox.embed.metrics.BacklogGauges;
import io.queuebox.embed.metrics.DeliveryMetrics;
import io.queuebox.domain.DeliveryEngine;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.DeliveryListener;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.WakeReason;
import io.queuebox.ports.WakeSource;
import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.ports.OutboxEvent;
import io.queuebox.ports.OutboxWriter;
import java.util.function.Function;
import org.jdbi.v3.core.Handle;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.OptionalInt;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * QueueBox embedded in an application: the delivery engine on your data source and your publisher, with
 * optional Micrometer metrics. No configuration file, no HTTP server, no pools of its own.
 *
 * <pre>{@code
 * QueueBox relay = QueueBox.builder()
 *         .dataSource(dataSource)                       // your pool; QueueBox never closes it
 *         .publisher(publisher)                         // closed by you after stop()
 *         .settings(DeliverySettings.builder().workers(2).build())
 *         .meterRegistry(meterRegistry)                 // optional
 *         .start();
 * ...
 * relay.close();                                        // stops within the settings' shutdown deadline
 * }</pre>
 *
 * After the application commits events, {@link #wake()} (or {@link #wakeAfterCommit(Handle)} with Jdbi, or
 * {@link #writeAndCommit(Connection, List)} with plain JDBC) has them claimed at once instead of at the next
 * wake interval.
 *
 * The data source's JDBC URL chooses the database adapter (PostgreSQL or SQL Server, whichever is on the
 * class path); or give the store of an adapter yourself with {@link Builder#store}. The outbox table must
 * exist: run the adapter's shipped scripts with your migrations, or {@code queuebox migrate}.
 */
public final class QueueBox implements AutoCloseable {

    private final DeliveryEngine engine;
    private final OutboxStore store;
    private final MessagePublisher publisher;
    private final BacklogGauges backlog;
    /** The writer of a JDBC URL's database for this relay's table; null when built with a store. */
    private final Function<String, OutboxWriter<Connection>> writers;
    private volatile OutboxWriter<Connection> writer;

    private QueueBox(DeliveryEngine engine, OutboxStore store, MessagePublisher publisher, BacklogGauges backlog,
                     Function<String, OutboxWriter<Connection>> writers) {
        this.engine = engine;
        this.store = store;
        this.publisher = publisher;
        this.backlog = backlog;
        this.writers = writers;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The store the engine claims from, for operator queries ({@link OutboxStore#stats()}, replay). */
    public OutboxStore store() {
        return store;
    }

    /**
     * Asks the engine to claim now, for example right after the application committed events (in Spring, from a
     * {@code TransactionSynchronization.afterCommit}). A hint: a wake-up before the commit finds nothing and costs
     * one claim; the events are then delivered at the next interval, never lost. Thread-safe, returns at once.
     */
    public void wake() {
        engine.wake(WakeReason.EXTERNAL);
    }

    /**
     * {@link #wake()} naming the events just committed: a claim already under way cannot have seen them, so an
     * idle worker claims them at once, and a worker that was busy meanwhile looks again after its batch only for
     * those no claim has taken (one of its own rows may have held them back). Thread-safe, returns at once.
     */
    public void wakeFor(Collection<UUID> eventIds) {
        engine.wakeFor(WakeReason.EXTERNAL, eventIds);
    }

    /**
     * Wakes delivery once the transaction of the Jdbi {@code handle} commits (Jdbi's {@link Handle#afterCommit}),
     * and not after a rollback. Call it in the transaction that writes the events; when the handle is not in a
     * transaction (auto-commit), its statements are committed already and delivery is woken at once.
     */
    public void wakeAfterCommit(Handle handle) {
        Objects.requireNonNull(handle, "handle");
        if (handle.isInTransaction()) {
            handle.afterCommit(this::wake);
        } else {
            wake();
        }
    }

    /**
     * For plain JDBC, which has no commit hook: writes {@code events} on {@code connection} in its open
     * transaction (after the business change the caller made in it), commits, and wakes delivery. The events go
     * to the outbox table of this relay's {@code dataSource} ({@link Builder#outbox}, else the database's
     * default), with the writer of the database the connection's URL names. On an exception nothing was committed
     * by this call: roll back, as after any failed statement. The connection is not closed.
     *
     * @throws IllegalStateException when the connection is in auto-commit (the events would commit without the
     *                               business change), or when the relay was built with {@link Builder#store}
     *                               (its table is unknown here: write with the adapter's writer, commit, then
     *                               {@link #wake()})
     * @throws SQLException          when the commit fails
     */
    public void writeAndCommit(Connection connection, List<OutboxEvent> events) throws SQLException {
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(events, "events");
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("writeAndCommit needs the connection's transaction: call"
                    + " setAutoCommit(false) before the business change, so both commit together");
        }
        writerFor(connection).enqueueAll(connection, events);
        connection.commit();
        wakeFor(events.stream().map(OutboxEvent::eventId).toList());
    }

    private OutboxWriter<Connection> writerFor(Connection connection) throws SQLException {
        OutboxWriter<Connection> known = writer;
        if (known != null) {
            return known;
        }
        if (writers == null) {
            throw new IllegalStateException("writeAndCommit writes to the outbox of dataSource(...); this relay was"
                    + " built with store(...): write with your adapter's writer, commit, then call wake()");
        }
        known = writers.apply(connection.getMetaData().getURL());
        writer = known;
        return known;
    }

    /** Whether the engine runs. */
    public boolean isRunning() {
        return engine.isRunning();
    }

    /**
     * The liveness and delivery-readiness answer: up while the engine runs with every one of its threads;
     * down, with the thread and the reason, when one ended (delivery may have stalled: restart the relay).
     */
    public Health liveness() {
        return engine.health();
    }

    /** The publisher's health, for readiness. */
    public Health brokerHealth() {
        return publisher.health();
    }

    /**
     * Stops claiming and lets in-flight publishes finish until {@code deadline}; a batch still publishing
     * after it keeps its lease until the lease lapses, so no other relay sends it meanwhile. Does not close
     * the data source or the publisher.
     *
     * @return whether everything finished within the deadline
     */
    public boolean stop(Duration deadline) {
        try {
            return engine.stop(deadline);
        } finally {
            if (backlog != null) {
                backlog.close();
            }
        }
    }

    /** {@link #stop} with the settings' shutdown deadline. */
    @Override
    public void close() {
        stop(engine.settings().shutdownDeadline());
    }

    /**
     * Builds and starts a {@link QueueBox}. {@code publisher} and one of {@code dataSource} or {@code store}
     * are required; defaults: {@link DeliverySettings#defaults()}, the database's default outbox table
     * ({@code public.queuebox_outbox} on PostgreSQL, {@code dbo.queuebox_outbox} on SQL Server), no metrics, no
     * extra listener, no wake sources, the UTC system clock, backlog gauges sampled every 15 s.
     */
    public static final class Builder {
        private DataSource dataSource;
        private OutboxStore store;
        private MessagePublisher publisher;
        private DeliverySettings settings = DeliverySettings.defaults();
        private OutboxTable outbox;
        private MeterRegistry meterRegistry;
        private Duration backlogSampleInterval = Duration.ofSeconds(15);
        private DeliveryListener listener = DeliveryListener.NOOP;
        private final List<WakeSource> wakeSources = new ArrayList<>();
        private Clock clock = Clock.systemUTC();

        private Builder() {
        }

        /**
         * The database holding the outbox table; the JDBC URL its connections report chooses the adapter.
         * Required unless {@link #store} is given.
         */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = required(dataSource, "dataSource");
            return this;
        }

        /**
         * The store to claim from, built by an adapter ({@code PostgresOutbox.store(...)},
         * {@code SqlServerOutbox.store(...)}, or your own); instead of {@link #dataSource} and {@link #outbox}.
         */
        public Builder store(OutboxStore store) {
            this.store = required(store, "store");
            return this;
        }

        /** Where events go. Required. */
        public Builder publisher(MessagePublisher publisher) {
            this.publisher = required(publisher, "publisher");
            return this;
        }

        /** Batch size, workers, leases, ordering, retry, shutdown deadline, purge. */
        public Builder settings(DeliverySettings settings) {
            this.settings = required(settings, "settings");
            return this;
        }

        /** Schema, table, delete-on-send and payload limit of the outbox, with {@link #dataSource}. */
        public Builder outbox(OutboxTable outbox) {
            this.outbox = required(outbox, "outbox");
            return this;
        }

        /** Registers the delivery meters and backlog gauges (see docs/operations.md) in this registry. */
        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = required(meterRegistry, "meterRegistry");
            return this;
        }

        /** How often the backlog gauges query the database; default 15 s. */
        public Builder backlogSampleInterval(Duration interval) {
            if (interval == null || interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("backlogSampleInterval must be positive, got: " + interval);
            }
            this.backlogSampleInterval = interval;
            return this;
        }

        /** Receives the engine's events, after the metrics. */
        public Builder listener(DeliveryListener listener) {
            this.listener = required(listener, "listener");
            return this;
        }

        /**
         * A source of wake-ups (a capture supervisor, or the domain's {@code InsertNotificationWakeSource} on
         * {@code PostgresOutbox.insertNotifications(...)}); started and closed with the engine. While none of the
         * sources is UP, the engine waits {@link DeliverySettings#fallbackWakeInterval()} instead of its wake
         * interval.
         */
        public Builder wakeSource(WakeSource wakeSource) {
            wakeSources.add(required(wakeSource, "wakeSource"));
            return this;
        }

        public Builder clock(Clock clock) {
            this.clock = required(clock, "clock");
            return this;
        }

        /**
         * Starts the engine (and the backlog sampler when a registry is set). Returns at once.
         *
         * @throws IllegalStateException when the publisher is missing, when neither or both of dataSource and
         *                               store are given, or when no database adapter accepts the data source's URL
         */
        public QueueBox start() {
            if ((dataSource == null) == (store == null) || publisher == null) {
                throw new IllegalStateException("publisher and one of dataSource or store are required");
            }
            if (store != null && outbox != null) {
                throw new IllegalStateException("outbox applies to dataSource; a store given with store() has its table");
            }
            OutboxStore store = this.store != null ? this.store : storeOn(dataSource);
            DeliveryListener all = meterRegistry == null ? listener
                    : new DeliveryMetrics(meterRegistry, publisher::health).andThen(listener);
            DeliveryEngine.Builder engine = DeliveryEngine.builder().store(store).publisher(publisher)
                    .settings(settings).clock(clock).listener(all);
            wakeSources.forEach(engine::wakeSource);
            DeliveryEngine built = engine.build();
            BacklogGauges backlog = meterRegistry == null ? null
                    : BacklogGauges.start(store, meterRegistry, backlogSampleInterval);
            built.start();
            return new QueueBox(built, store, publisher, backlog, this.store != null ? null : this::writerFor);
        }

        /**
         * The store of the adapter that accepts the data source's URL: read from a HikariCP pool's
         * configuration, else from a connection; a database that is down at start defers the choice to the
         * first call (see {@link DeferredStore}), while a URL no adapter accepts fails the start.
         */
        private OutboxStore storeOn(DataSource dataSource) {
            if (dataSource instanceof com.zaxxer.hikari.HikariDataSource pool && pool.getJdbcUrl() != null) {
                return storeFor(dataSource, pool.getJdbcUrl());
            }
            try {
                return storeFor(dataSource, urlOf(dataSource));
            } catch (SQLException down) {
                return new DeferredStore(() -> {
                    try {
                        return storeFor(dataSource, urlOf(dataSource));
                    } catch (SQLException e) {
                        throw new IllegalStateException("the database is not reachable yet: " + e.getMessage(), e);
                    }
                });
            }
        }

        private static String urlOf(DataSource dataSource) throws SQLException {
            try (Connection connection = dataSource.getConnection()) {
                return connection.getMetaData().getURL();
            }
        }

        private OutboxStore storeFor(DataSource dataSource, String url) {
            return open(url).store();
        }

        private OutboxWriter<Connection> writerFor(String url) {
            return open(url).writer();
        }

        private OutboxDatabase open(String url) {
            DatabaseProvider database = Databases.forUrl(url).orElseThrow(() -> new IllegalStateException(
                    "no database adapter on the class path accepts the data source's URL (" + scheme(url)
                            + "...); add adapter-postgres or adapter-sqlserver, or pass store(...)"));
            OutboxTable table = outbox != null ? outbox
                    : new OutboxTable(database.defaultSchema(), "queuebox_outbox", false, OptionalInt.empty());
            return database.open(dataSource, table);
        }

        /** {@code jdbc:<sub-protocol>:} only: the rest of a URL may hold credentials in forms no mask knows. */
        private static String scheme(String url) {
            if (url == null) {
                return "null";
            }
            java.util.regex.Matcher scheme = java.util.regex.Pattern.compile("^jdbc:[A-Za-z0-9_-]+:").matcher(url);
            return scheme.find() ? scheme.group() : "not a JDBC URL";
        }

        private static <T> T required(T value, String property) {
            if (value == null) {
                throw new IllegalArgumentException(property + " must not be null");
            }
            return Objects.requireNonNull(value);
        }
    }
}
