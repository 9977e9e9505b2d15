package io.queuebox.bootstrap.internal;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.bootstrap.QueueBox;
import io.queuebox.bootstrap.config.Keys;
import io.queuebox.bootstrap.config.Masking;
import io.queuebox.bootstrap.config.QueueBoxConfig;
import io.queuebox.bootstrap.http.DataSourceHealth;
import io.queuebox.bootstrap.http.HealthComponent;
import io.queuebox.bootstrap.http.HttpEndpoints;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.postgres.PostgresOutbox;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running relay of {@code queuebox run}: pools, publisher, engine, HTTP endpoints, in that order,
 * closed in the reverse order.
 */
public final class Relay implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Relay.class);

    private final QueueBoxConfig config;
    private final Deque<AutoCloseable> resources = new ArrayDeque<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private QueueBox queueBox;
    private HttpEndpoints http;

    private Relay(QueueBoxConfig config) {
        this.config = config;
    }

    /**
     * Starts everything; on failure closes what was started and rethrows.
     *
     * @throws io.queuebox.bootstrap.internal.DatabaseUnreachableException after {@code startup.databaseWaitMs}
     * @throws io.queuebox.bootstrap.config.ConfigException when the broker provider rejects a setting
     */
    public static Relay start(QueueBoxConfig config) {
        Relay relay = new Relay(config);
        try {
            relay.startAll();
            return relay;
        } catch (RuntimeException e) {
            relay.close();
            throw e;
        }
    }

    private void startAll() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        resources.push(registry::close);
        bindJvmMetrics(registry);

        String url = config.string(Keys.DATABASE_URL);
        HikariDataSource pool = Pools.delivery(config, registry);
        resources.push(pool);
        LOG.info("waiting for database {} (up to {} ms)", Masking.maskUrl(url), config.longValue(Keys.STARTUP_DATABASE_WAIT_MS));
        DatabaseWait.await(pool, url, config.millis(Keys.STARTUP_DATABASE_WAIT_MS));

        checkOutboxTable(pool);

        String brokerType = config.string(Keys.BROKER_TYPE);
        MessagePublisher publisher = Publishers.create(brokerType, config.brokerSettings());
        resources.push(publisher);

        Health capture = captureHealth();
        DeliverySettings settings = Settings.delivery(config, false);
        queueBox = QueueBox.builder()
                .dataSource(pool)
                .publisher(publisher)
                .settings(settings)
                .outbox(Settings.outbox(config))
                .meterRegistry(registry)
                .backlogSampleInterval(config.millis(Keys.METRICS_BACKLOG_SAMPLE_MS))
                .listener(new LoggingListener())
                .start();

        http = HttpEndpoints.start(config.string(Keys.HTTP_HOST), config.integer(Keys.HTTP_PORT), queueBox::liveness,
                List.of(HealthComponent.required("database", new DataSourceHealth(pool)),
                        HealthComponent.required("broker", publisher::health),
                        HealthComponent.advisory("outbox-capture", () -> capture)),
                registry::scrape);
        resources.push(http);
        LOG.info("QueueBox relay started: {} -> {} ({} workers, batch {}, owner {}); http on port {}",
                config.string(Keys.OUTBOX_SCHEMA) + "." + config.string(Keys.OUTBOX_TABLE), brokerType,
                settings.workers(), settings.batchSize(), settings.owner(), http.port());
    }

    /** Fails the start with a hint when the table is missing, instead of failing every claim afterwards. */
    private void checkOutboxTable(HikariDataSource pool) {
        try {
            PostgresOutbox.store(pool, Settings.outbox(config)).stats();
        } catch (RuntimeException e) {
            throw new IllegalStateException("the outbox table " + config.string(Keys.OUTBOX_SCHEMA) + "."
                    + config.string(Keys.OUTBOX_TABLE) + " cannot be read (run 'queuebox migrate' first?): "
                    + Masking.maskUrl(String.valueOf(e.getMessage())), e);
        }
    }

    /** Capture connectors are not part of this jar yet: say so, advisory, and keep delivering by polling. */
    private Health captureHealth() {
        CaptureMode mode = Settings.captureMode(config);
        boolean enabled = config.bool(Keys.CAPTURE_ENABLED);
        if (!enabled || mode == CaptureMode.POLLING) {
            return Health.up("capture disabled; delivery polls every " + config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS) + " ms");
        }
        LOG.warn("outbox.capture.mode {} is configured, but this build has no capture connector; delivery polls every {} ms",
                mode.configName(), config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS));
        return Health.down("capture connector " + mode.configName() + " is not available in this build; delivery polls every "
                + config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS) + " ms");
    }

    private static void bindJvmMetrics(PrometheusMeterRegistry registry) {
        new ClassLoaderMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
    }

    /** The HTTP port actually bound. */
    public int httpPort() {
        return http.port();
    }

    public boolean isRunning() {
        return queueBox != null && queueBox.isRunning();
    }

    /**
     * Stops claiming, lets in-flight publishes finish within {@code shutdown.deadlineMs}, releases leases, then
     * closes the HTTP endpoints, the publisher and the pools. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        LOG.info("stopping: no new claims; in-flight batches get up to {} ms", config.longValue(Keys.SHUTDOWN_DEADLINE_MS));
        // The engine drains first, while the HTTP endpoints still answer, then everything else in reverse start order.
        if (queueBox != null) {
            closeQuietly(() -> {
                if (!queueBox.stop(config.millis(Keys.SHUTDOWN_DEADLINE_MS))) {
                    LOG.warn("in-flight batches did not finish within shutdown.deadlineMs; their leases were released");
                }
            });
        }
        while (!resources.isEmpty()) {
            closeQuietly(resources.pop());
        }
        LOG.info("stopped");
    }

    private static void closeQuietly(AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception e) {
            LOG.warn("while stopping: {}", Masking.maskUrl(String.valueOf(e)));
        }
    }
}
