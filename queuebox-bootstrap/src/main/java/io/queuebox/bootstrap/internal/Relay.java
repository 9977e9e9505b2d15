package io.queuebox.bootstrap.internal;

import io.queuebox.embed.internal.Pools;
import io.queuebox.embed.internal.Settings;
import io.queuebox.embed.internal.Publishers;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.queuebox.embed.QueueBox;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.Masking;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.bootstrap.console.CaptureFacts;
import io.queuebox.bootstrap.console.Console;
import io.queuebox.bootstrap.console.ConsoleSeries;
import io.queuebox.bootstrap.console.ConsoleSettings;
import io.queuebox.bootstrap.http.DataSourceHealth;
import java.util.Optional;
import java.util.OptionalLong;
import io.queuebox.bootstrap.http.HealthComponent;
import io.queuebox.bootstrap.http.HttpEndpoints;
import io.queuebox.bootstrap.logs.DeliveryLog;
import io.queuebox.bootstrap.logs.DependencyWatch;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.capture.DebeziumCapture;
import io.queuebox.capture.FileCaptureStateDirectory;
import io.queuebox.domain.CaptureStatus;
import io.queuebox.domain.CaptureSupervisor;
import io.queuebox.domain.InsertNotificationWakeSource;
import io.queuebox.jdbc.DedicatedConnectionLock;
import io.queuebox.ports.InsertNotifications;
import java.util.ArrayList;
import java.util.Properties;
import io.queuebox.ports.CaptureSourceInspector;
import io.micrometer.core.instrument.Gauge;
import java.time.Duration;
import java.time.Instant;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.Health;
import io.queuebox.ports.MessagePublisher;
import io.queuebox.embed.config.Databases;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxDatabase;
import java.nio.file.Path;
import java.util.function.Supplier;
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
    /** The {@code application_name} of the insert listener's session. */
    public static final String NOTIFY_APPLICATION_NAME = "queuebox-notify";

    private final QueueBoxConfig config;
    private final Deque<AutoCloseable> resources = new ArrayDeque<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private QueueBox queueBox;
    private HttpEndpoints http;
    // What the console's capture view reads; set while capture is wired.
    private DebeziumCapture captureConnectors;
    private RetainedWalMonitor walMonitor;

    private Relay(QueueBoxConfig config) {
        this.config = config;
    }

    /**
     * Starts everything; on failure closes what was started and rethrows.
     *
     * @throws io.queuebox.bootstrap.internal.DatabaseUnreachableException after {@code startup.databaseWaitMs}
     * @throws io.queuebox.embed.config.ConfigException when the broker provider rejects a setting
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

        DatabaseProvider provider = Databases.of(config);
        OutboxDatabase database = provider.open(pool, Settings.outbox(config));
        DatabaseRights.requireForDelivery(database);
        checkOutboxTable(database);

        String brokerType = config.string(Keys.BROKER_TYPE);
        MessagePublisher publisher = Publishers.create(brokerType, config.brokerSettings());
        resources.push(publisher);

        CaptureSettings captureSettings = Settings.capture(config);
        CaptureSupervisor capture = captureSettings.active() ? captureSupervisor(captureSettings, registry) : null;
        // The validation refuses notify together with capture, and on a database that cannot notify.
        InsertNotificationWakeSource insertWakes = config.string(Keys.WAKE_MODE).equals("notify")
                ? insertWakeSource(provider, database, registry) : null;
        DeliverySettings settings = Settings.delivery(config, capture != null ? Settings.Wakes.CAPTURE
                : insertWakes != null ? Settings.Wakes.NOTIFY : Settings.Wakes.POLL);
        DeliveryLog deliveryLog = new DeliveryLog(publisher::health);
        ConsoleSettings consoleSettings = ConsoleSettings.from(config);
        // Off by default: then no sampler thread, no listener and no /console context exist.
        ConsoleSeries consoleSeries = consoleSettings.enabled()
                ? ConsoleSeries.start(registry, consoleSettings.sampleInterval()) : null;
        if (consoleSeries != null) {
            resources.push(consoleSeries);
        }
        QueueBox.Builder builder = QueueBox.builder()
                .store(database.store())
                .publisher(publisher)
                .settings(settings)
                .meterRegistry(registry)
                .backlogSampleInterval(config.millis(Keys.METRICS_BACKLOG_SAMPLE_MS))
                .listener(consoleSeries == null ? deliveryLog : deliveryLog.andThen(consoleSeries));
        if (capture != null) {
            // The engine starts and closes it with itself.
            builder.wakeSource(capture);
        }
        if (insertWakes != null) {
            builder.wakeSource(insertWakes);
        }
        queueBox = builder.start();
        Supplier<Health> captureHealth = capture != null ? capture::health : this::captureInactive;
        DataSourceHealth databaseHealth = new DataSourceHealth(pool);
        resources.push(DependencyWatch.start(deliveryLog, databaseHealth, publisher::health, Duration.ofSeconds(1)));

        List<HealthComponent> components = new ArrayList<>(List.of(HealthComponent.required("delivery", queueBox::liveness),
                HealthComponent.required("database", databaseHealth),
                HealthComponent.required("broker", publisher::health),
                HealthComponent.advisory("outbox-capture", captureHealth)));
        if (insertWakes != null) {
            components.add(HealthComponent.advisory("outbox-notify", insertWakes::health));
            resources.push(logTransitions(insertWakes));
        }
        http = HttpEndpoints.start(config.string(Keys.HTTP_HOST), config.integer(Keys.HTTP_PORT), queueBox::liveness,
                components, registry::scrape);
        resources.push(http);
        if (consoleSeries != null) {
            http.serve(Console.PATH, new Console(consoleSettings, database.store(), consoleSeries,
                    () -> captureFacts(captureSettings, capture, settings.owner())));
            LOG.info("console at http://{}:{}{}/ ({}{})", config.string(Keys.HTTP_HOST), http.port(), Console.PATH,
                    (consoleSettings.allowRemote() ? "remote clients allowed" : "this host's clients only")
                            + (consoleSettings.allowedHosts().isEmpty() ? ""
                                    : "; also served under " + String.join(", ", consoleSettings.allowedHosts())),
                    consoleSettings.replayEnabled() ? "; replay needs console.adminToken" : "; read-only: no console.adminToken");
        }
        LOG.info("QueueBox relay started: {} {} -> {} ({} workers, batch {}, owner {}); http on port {}",
                provider.displayName(), config.string(Keys.OUTBOX_SCHEMA) + "." + config.string(Keys.OUTBOX_TABLE), brokerType,
                settings.workers(), settings.batchSize(), settings.owner(), http.port());
    }

    /**
     * The insert listener of {@code outbox.wake.mode: notify}: a connection of its own (never one of the delivery
     * pool, which it would hold for the whole run), as the delivery account, named {@value #NOTIFY_APPLICATION_NAME}
     * in {@code pg_stat_activity}.
     */
    private InsertNotificationWakeSource insertWakeSource(DatabaseProvider provider, OutboxDatabase database,
                                                          PrometheusMeterRegistry registry) {
        Properties properties = new Properties();
        properties.putAll(provider.connectionProperties(config.longValue(Keys.DATABASE_SOCKET_TIMEOUT_MS),
                NOTIFY_APPLICATION_NAME));
        config.optional(Keys.DATABASE_USERNAME).ifPresent(user -> properties.setProperty("user", user));
        config.optional(Keys.DATABASE_PASSWORD).ifPresent(password -> properties.setProperty("password", password));
        InsertNotifications notifications = database.insertNotifications(
                        DedicatedConnectionLock.ConnectionFactory.fromUrl(config.string(Keys.DATABASE_URL), properties))
                .orElseThrow(() -> new IllegalStateException(provider.displayName() + " cannot notify inserts;"
                        + " set outbox.wake.mode to poll"));
        InsertNotificationWakeSource source = new InsertNotificationWakeSource(notifications);
        FunctionCounter.builder("queuebox.notify.notifications", source, InsertNotificationWakeSource::notificationsReceived)
                .description("Insert notifications the listener received (outbox.wake.mode notify); each wakes delivery")
                .register(registry);
        LOG.info("wake-ups: {}; delivery also checks the table every {} ms, and every {} ms while the listener is down",
                notifications.description(), config.longValue(Keys.WAKE_RECONCILIATION_INTERVAL_MS),
                config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS));
        return source;
    }

    /**
     * Logs the insert listener going down (WARN, with the reason) and up again (INFO): the domain source does not
     * log, and an operator should not need {@code /health/ready} to learn that delivery fell back to polling.
     */
    private AutoCloseable logTransitions(InsertNotificationWakeSource source) {
        java.util.concurrent.ScheduledExecutorService watch = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                runnable -> {
                    Thread thread = new Thread(runnable, "queuebox-notify-watch");
                    thread.setDaemon(true);
                    return thread;
                });
        // What was logged last: UP, DOWN, or nothing yet (connecting at start is not worth a warning).
        java.util.concurrent.atomic.AtomicReference<Health.Status> logged = new java.util.concurrent.atomic.AtomicReference<>();
        watch.scheduleWithFixedDelay(() -> {
            try {
                Health health = source.health();
                if (health.isUp() && logged.getAndSet(Health.Status.UP) != Health.Status.UP) {
                    LOG.info("insert listener up: {}", health.detail());
                } else if (!health.isUp() && !health.detail().contains(": connecting;")
                        && logged.getAndSet(Health.Status.DOWN) != Health.Status.DOWN) {
                    LOG.warn("insert listener down: {}", Masking.maskUrl(health.detail()));
                }
            } catch (RuntimeException e) {
                LOG.debug("insert listener watch failed", e);
            }
        }, 1, 1, java.util.concurrent.TimeUnit.SECONDS);
        return watch::shutdownNow;
    }

    /** Fails the start with a hint when the table is missing, instead of failing every claim afterwards. */
    private void checkOutboxTable(OutboxDatabase database) {
        try {
            database.store().stats();
        } catch (RuntimeException e) {
            throw new IllegalStateException("the outbox table " + config.string(Keys.OUTBOX_SCHEMA) + "."
                    + config.string(Keys.OUTBOX_TABLE) + " cannot be read (run 'queuebox migrate' first?): "
                    + Masking.maskUrl(String.valueOf(e.getMessage())), e);
        }
    }

    /** The capture view's facts, from the running supervisor and the samplers (never by trying the lock). */
    private CaptureFacts captureFacts(CaptureSettings captureSettings, CaptureSupervisor capture, String owner) {
        Optional<CaptureStatus> status = Optional.ofNullable(capture).map(CaptureSupervisor::status);
        String holder = status.map(s -> switch (s.state()) {
            case RUNNING, RETRYING -> "this relay (" + owner + ")";
            case STARTING -> "this relay is taking the lock (" + owner + ")";
            case FAULT -> s.fault().map(fault -> switch (fault) {
                case IDENTITY_OWNED -> "another process holds the lock";
                case OWNERSHIP_LOST -> "none: this relay lost the lock and takes it again after the restart backoff";
                default -> "none: this relay stopped capture";
            }).orElse("none: this relay stopped capture");
            default -> "none";
        }).orElse("none: capture does not run in this relay");
        return new CaptureFacts(captureSettings.mode().configName(), captureSettings.enabled(), status, holder,
                captureConnectors == null ? Optional.empty() : captureConnectors.statistics().lastEventAt(),
                // Without capture in this relay no slot is read, so none is named.
                capture == null ? "" : captureSettings.fingerprint().slot(),
                walMonitor == null ? OptionalLong.empty() : walMonitor.retainedBytes(),
                walMonitor == null ? OptionalLong.empty() : OptionalLong.of(walMonitor.warnBytes()));
    }

    private Health captureInactive() {
        return Health.up("capture " + (config.bool(Keys.CAPTURE_ENABLED) ? "mode polling" : "disabled")
                + (config.string(Keys.WAKE_MODE).equals("notify") ? "; insert notifications wake delivery (outbox-notify)"
                : "; delivery polls every " + config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS) + " ms"));
    }

    /**
     * The capture supervisor on its own small pool (state row, inspector, and the session lock that holds one
     * connection for the whole run), so capture never takes a connection from delivery.
     */
    private CaptureSupervisor captureSupervisor(CaptureSettings captureSettings, PrometheusMeterRegistry registry) {
        HikariDataSource capturePool = Pools.capture(config, registry);
        resources.push(capturePool);
        Settings.Account account = Settings.captureAccount(config);
        OutboxDatabase database = Databases.of(config).open(capturePool, Settings.outbox(config));
        DebeziumCapture connectors = DebeziumCapture.builder()
                .credentials(account.username(), account.password())
                .sqlServerEncrypt(config.optional(Keys.CAPTURE_SQLSERVER_ENCRYPT).map(Boolean::parseBoolean).orElse(true))
                .sqlServerTrustServerCertificate(config.optional(Keys.CAPTURE_SQLSERVER_TRUST_SERVER_CERTIFICATE)
                        .map(Boolean::parseBoolean).orElse(false))
                .pollInterval(config.millis(Keys.CAPTURE_POLL_INTERVAL_MS))
                .heartbeatInterval(config.millis(Keys.CAPTURE_HEARTBEAT_INTERVAL_MS))
                .offsetFlushInterval(config.millis(Keys.CAPTURE_OFFSET_FLUSH_INTERVAL_MS))
                .snapshotMode(config.string(Keys.CAPTURE_SNAPSHOT_MODE))
                .build();
        FunctionCounter.builder("queuebox.capture.wake.events", connectors, c -> c.statistics().wakeEvents())
                .description("Inserts into the outbox table that capture saw (each wakes delivery)").register(registry);
        FunctionCounter.builder("queuebox.capture.ignored.events", connectors, c -> c.statistics().ignoredEvents())
                .description("Updates, deletes and tombstones capture saw and ignored").register(registry);
        LOG.info("capture {} on {}:{}/{}{}, state in {}; delivery also checks the table every {} ms",
                captureSettings.mode().configName(), captureSettings.fingerprint().host(), captureSettings.port(),
                captureSettings.fingerprint().database(), captureSettings.fingerprint().slot().isEmpty() ? ""
                        : " (slot " + captureSettings.fingerprint().slot() + ", publication "
                        + captureSettings.fingerprint().publication() + ")", captureSettings.stateDirectory(),
                captureSettings.reconciliationInterval().toMillis());
        // The supervisor's probe would fault capture without a word in the log (only /health/ready shows it).
        StateDirectoryCheck.problem(Path.of(captureSettings.stateDirectory())).ifPresent(problem ->
                LOG.error("{}; capture cannot run, delivery goes on and polls every {} ms", problem,
                        captureSettings.reconciliationInterval().toMillis()));
        // The slot (or CDC) is checked where capture reads: a replica in outbox.capture.connection.* has its own.
        CaptureSourceInspector inspector = sourceInspector(database, registry);
        CaptureSupervisor supervisor = CaptureSupervisor.builder()
                .settings(captureSettings)
                .stateStore(database.captureStateStore())
                .stateDirectory(new FileCaptureStateDirectory(Path.of(captureSettings.stateDirectory())))
                .lock(database.captureLock())
                .inspector(inspector)
                .connectors(connectors)
                .build();
        for (CaptureStatus.State state : CaptureStatus.State.values()) {
            Gauge.builder("queuebox.capture.state", supervisor, s -> s.status().state() == state ? 1 : 0)
                    .tag("state", state.name())
                    .description("1 for the state capture is in (RUNNING is healthy), 0 for the others")
                    .register(registry);
        }
        Gauge.builder("queuebox.capture.last.event.age", connectors, c -> c.statistics().lastEventAt()
                        .map(at -> Duration.between(at, Instant.now()).toMillis() / 1000.0).orElse(Double.NaN))
                .baseUnit("seconds")
                .description("Time since the last insert capture saw; NaN before the first")
                .register(registry);
        // Only PostgreSQL has a slot that retains log; the key exists only there.
        captureConnectors = connectors;
        config.optional(Keys.CAPTURE_RETAINED_WAL_WARN_BYTES).ifPresent(warnBytes -> {
            walMonitor = RetainedWalMonitor.start(inspector, captureSettings, Long.parseLong(warnBytes),
                    config.millis(Keys.METRICS_BACKLOG_SAMPLE_MS), registry);
            resources.push(walMonitor);
        });
        return supervisor;
    }

    private CaptureSourceInspector sourceInspector(OutboxDatabase database, PrometheusMeterRegistry registry) {
        if (!Pools.captureSourceElsewhere(config)) {
            return database.captureSourceInspector();
        }
        HikariDataSource sourcePool = Pools.captureSource(config, registry);
        resources.push(sourcePool);
        return Databases.of(config).open(sourcePool, Settings.outbox(config)).captureSourceInspector();
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
