package io.queuebox.capture;

import io.queuebox.ports.CaptureConnector;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * Creates Debezium embedded connectors that wake delivery. One instance serves every restart of the
 * capture of one process, so its {@link #statistics()} span restarts.
 *
 * <p>Defaults: poll interval 20 ms (how long the connector's reader pauses when it finds the log empty, and on SQL
 * Server the longest a new row waits in Debezium's queue; lower costs CPU while idle), heartbeat every 10 s (so a
 * slot on a busy database advances while the outbox is quiet), offsets flushed every 5 s (after a crash the
 * connector re-emits at most that much, which costs a spurious wake-up, never a message), {@code snapshot.mode=no_data}
 * (delivery finds existing rows through SQL at start, so a snapshot would only repeat wake-ups).
 *
 * <p>What differs between databases is a {@link ConnectorDialect}: {@code postgres-logical} (pgoutput on
 * the user's publication) or {@code sqlserver-cdc} (the CDC change tables; connection encrypted by default).
 */
public final class DebeziumCapture implements CaptureConnector.Factory {

    static final String TOPIC_PREFIX = "queuebox";

    private final Credentials credentials;
    private final Duration pollInterval;
    private final Duration heartbeatInterval;
    private final Duration offsetFlushInterval;
    private final String snapshotMode;
    private final Map<String, String> extraProperties;
    private final boolean sqlServerEncrypt;
    private final boolean sqlServerTrustServerCertificate;
    private final CaptureCounters counters;

    private DebeziumCapture(Builder builder) {
        this.sqlServerEncrypt = builder.sqlServerEncrypt;
        this.sqlServerTrustServerCertificate = builder.sqlServerTrustServerCertificate;
        this.credentials = builder.credentials;
        this.pollInterval = builder.pollInterval;
        this.heartbeatInterval = builder.heartbeatInterval;
        this.offsetFlushInterval = builder.offsetFlushInterval;
        this.snapshotMode = builder.snapshotMode;
        this.extraProperties = Map.copyOf(builder.extraProperties);
        this.counters = new CaptureCounters(builder.clock);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public CaptureConnector create(CaptureSettings settings, CaptureIdentity identity) {
        ConnectorDialect dialect = dialectFor(settings.mode());
        Properties props = engineProperties(settings, identity, dialect);
        return new DebeziumCaptureConnector(props, dialect.outboxTopic(TOPIC_PREFIX, settings), counters,
                "queuebox-capture-" + identity.value());
    }

    /** What capture saw since this factory was created. */
    public CaptureStatistics statistics() {
        return counters.snapshot();
    }

    Properties engineProperties(CaptureSettings settings, CaptureIdentity identity, ConnectorDialect dialect) {
        Properties props = new Properties();
        FileCaptureStateDirectory directory = new FileCaptureStateDirectory(Path.of(settings.stateDirectory()));
        String table = settings.fingerprint().schema() + "." + settings.fingerprint().table();
        props.setProperty("name", "queuebox-capture-" + identity.value());
        props.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        props.setProperty("offset.storage.file.filename", directory.offsetsFile().toString());
        props.setProperty("offset.flush.interval.ms", Long.toString(offsetFlushInterval.toMillis()));
        props.setProperty("topic.prefix", TOPIC_PREFIX);
        props.setProperty("table.include.list", table);
        // Capture never reads payloads: leave the heavy columns out of the change events.
        props.setProperty("column.exclude.list", table + ".payload," + table + ".headers");
        // Only inserts create work; dropping the rest at the source saves decoding them.
        props.setProperty("skipped.operations", "u,d,t");
        props.setProperty("tombstones.on.delete", "false");
        props.setProperty("snapshot.mode", snapshotMode);
        props.setProperty("poll.interval.ms", Long.toString(pollInterval.toMillis()));
        props.setProperty("heartbeat.interval.ms", Long.toString(heartbeatInterval.toMillis()));
        // Failures surface to the capture supervisor, which owns the restart policy (1 s up to 30 s).
        props.setProperty("errors.max.retries", "0");
        props.putAll(dialect.connectorProperties(settings, credentials));
        props.putAll(extraProperties);
        return props;
    }

    ConnectorDialect dialectFor(CaptureMode mode) {
        return switch (mode) {
            case POSTGRES_LOGICAL -> new PostgresLogicalDialect();
            case SQLSERVER_CDC -> new SqlServerCdcDialect(sqlServerEncrypt, sqlServerTrustServerCertificate);
            case POLLING -> throw new IllegalArgumentException(
                    "outbox.capture.mode: 'polling' runs no connector");
        };
    }

    /** The account capture connects with. The password never appears in {@link #toString()}. */
    public record Credentials(String username, String password) {
        public Credentials {
            if (username == null || username.isBlank()) {
                throw new IllegalArgumentException("outbox.capture.connection.username must be non-blank");
            }
            password = password == null ? "" : password;
        }

        @Override
        public String toString() {
            return "Credentials[username=" + username + ", password=******]";
        }
    }

    /** Builds a {@link DebeziumCapture}; every setter validates at once and names the setting. */
    public static final class Builder {
        private Credentials credentials;
        private Duration pollInterval = Duration.ofMillis(20);
        private Duration heartbeatInterval = Duration.ofSeconds(10);
        private Duration offsetFlushInterval = Duration.ofSeconds(5);
        private String snapshotMode = "no_data";
        private Map<String, String> extraProperties = Map.of();
        private Clock clock = Clock.systemUTC();
        private boolean sqlServerEncrypt = true;
        private boolean sqlServerTrustServerCertificate;

        private Builder() {
        }

        /**
         * {@code outbox.capture.sqlserver.encrypt}: whether the SQL Server connector encrypts its connection
         * ({@code database.encrypt}); default true, as mssql-jdbc's own default.
         */
        public Builder sqlServerEncrypt(boolean value) {
            this.sqlServerEncrypt = value;
            return this;
        }

        /**
         * {@code outbox.capture.sqlserver.trustServerCertificate}: accept the server's certificate without
         * validating it ({@code database.trustServerCertificate}); default false. Only for test servers with a
         * self-signed certificate.
         */
        public Builder sqlServerTrustServerCertificate(boolean value) {
            this.sqlServerTrustServerCertificate = value;
            return this;
        }

        public Builder credentials(String username, String password) {
            this.credentials = new Credentials(username, password);
            return this;
        }

        /** {@code outbox.capture.pollIntervalMs}: how long Debezium waits for new changes before it looks again. */
        public Builder pollInterval(Duration value) {
            this.pollInterval = positive(value, "outbox.capture.pollIntervalMs");
            return this;
        }

        public Builder heartbeatInterval(Duration value) {
            this.heartbeatInterval = positive(value, "outbox.capture.heartbeatIntervalMs");
            return this;
        }

        public Builder offsetFlushInterval(Duration value) {
            this.offsetFlushInterval = positive(value, "outbox.capture.offsetFlushIntervalMs");
            return this;
        }

        /** {@code no_data} (default) or {@code initial} (emit existing rows once, for a documented recovery). */
        public Builder snapshotMode(String value) {
            if (!"no_data".equals(value) && !"initial".equals(value)) {
                throw new IllegalArgumentException(
                        "outbox.capture.snapshotMode: '" + value + "' is not allowed, use no_data or initial");
            }
            this.snapshotMode = value;
            return this;
        }

        /** Further Debezium properties, applied last (for tuning; QueueBox's safety settings can be overridden). */
        public Builder debeziumProperties(Map<String, String> value) {
            this.extraProperties = Map.copyOf(value);
            return this;
        }

        public Builder clock(Clock value) {
            this.clock = Objects.requireNonNull(value, "clock");
            return this;
        }

        public DebeziumCapture build() {
            if (credentials == null) {
                throw new IllegalStateException("credentials are required (outbox.capture.connection.username)");
            }
            return new DebeziumCapture(this);
        }

        private static Duration positive(Duration value, String key) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(key + ": '" + value + "' must be a positive duration");
            }
            return value;
        }
    }
}
