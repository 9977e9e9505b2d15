package io.queuebox.embed.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.domain.DeliverySettings;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureSettings;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.jdbc.OutboxTable;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.embed.config.Keys;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SettingsTest {

    private static QueueBoxConfig config(String... keyValues) {
        Map<String, String> values = new HashMap<>(Map.of(
                "database.url", "jdbc:postgresql://db-1:6543,db-2:6543/orders?ssl=true", "broker.type", "kafka"));
        for (int i = 0; i < keyValues.length; i += 2) {
            values.put(keyValues[i], keyValues[i + 1]);
        }
        return QueueBoxConfig.of(values);
    }

    @Test
    void deliverySettingsFollowTheConfiguration() {
        DeliverySettings settings = Settings.delivery(config(
                "outbox.batchSize", "50", "outbox.workers", "3", "outbox.pipelineDepth", "1", "outbox.pollIntervalMs", "250",
                "outbox.leaseMs", "10000", "outbox.ordering", "none", "outbox.parking", "continue-aggregate",
                "outbox.retry.initialMs", "200", "outbox.retry.maxMs", "60000", "outbox.retry.maxAttempts", "7",
                "outbox.retry.multiplier", "3", "outbox.retry.jitter", "0", "shutdown.deadlineMs", "9000",
                "outbox.retention.sentHours", "48", "instance.name", "relay-a"), false);

        assertThat(settings.owner()).isEqualTo("relay-a");
        assertThat(settings.batchSize()).isEqualTo(50);
        assertThat(settings.workers()).isEqualTo(3);
        assertThat(settings.pipelineDepth()).isEqualTo(1);
        assertThat(settings.wakeInterval()).isEqualTo(Duration.ofMillis(250));
        assertThat(settings.leaseLength()).isEqualTo(Duration.ofSeconds(10));
        assertThat(settings.ordering()).isEqualTo(Ordering.NONE);
        assertThat(settings.parkingPolicy()).isEqualTo(ParkingPolicy.CONTINUE_AGGREGATE);
        assertThat(settings.retryPolicy().initialDelay()).isEqualTo(Duration.ofMillis(200));
        assertThat(settings.retryPolicy().maxDelay()).isEqualTo(Duration.ofMinutes(1));
        assertThat(settings.retryPolicy().maxAttempts()).isEqualTo(7);
        assertThat(settings.retryPolicy().multiplier()).isEqualTo(3.0);
        assertThat(settings.shutdownDeadline()).isEqualTo(Duration.ofSeconds(9));
        assertThat(settings.purgeRetention()).isEqualTo(Duration.ofHours(48));
        assertThat(settings.purgeEnabled()).isTrue();
    }

    @Test
    void theWakeIntervalIsThePollIntervalOrTheReconciliationIntervalOfWhatWakesDeliveryAndPollingIsTheFallback() {
        QueueBoxConfig config = config("outbox.pollIntervalMs", "250", "outbox.wake.reconciliationIntervalMs", "20000",
                "outbox.capture.reconciliationIntervalMs", "40000");

        DeliverySettings poll = Settings.delivery(config, Settings.Wakes.POLL);
        DeliverySettings notify = Settings.delivery(config, Settings.Wakes.NOTIFY);
        DeliverySettings capture = Settings.delivery(config, Settings.Wakes.CAPTURE);

        assertThat(poll.wakeInterval()).isEqualTo(Duration.ofMillis(250));
        assertThat(notify.wakeInterval()).isEqualTo(Duration.ofSeconds(20));
        assertThat(capture.wakeInterval()).isEqualTo(Duration.ofSeconds(40));
        assertThat(List.of(poll, notify, capture)).allSatisfy(settings ->
                assertThat(settings.fallbackWakeInterval()).isEqualTo(Duration.ofMillis(250)));
        assertThat(Settings.delivery(config(), Settings.Wakes.NOTIFY).wakeInterval()).as("the default")
                .isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void deleteOnSendTurnsThePurgeOffAndReachesTheStore() {
        QueueBoxConfig config = config("outbox.deleteOnSend", "true", "outbox.table", "events_outbox");

        assertThat(Settings.delivery(config, false).purgeEnabled()).isFalse();
        OutboxTable outbox = Settings.outbox(config);
        assertThat(outbox.deleteOnSend()).isTrue();
        assertThat(outbox.table()).isEqualTo("events_outbox");
    }

    @Test
    void theRelayChecksPayloadSizesOnlyWhenOutboxMaxPayloadBytesIsSet() {
        OutboxTable unset = Settings.outbox(config());
        OutboxTable set = Settings.outbox(config("outbox.maxPayloadBytes", "4194304"));

        assertThat(unset.maxPayloadBytes()).as("no default for the relay: writers may allow more than 1 MiB")
                .isEmpty();
        assertThat(set.maxPayloadBytes()).hasValue(4_194_304);
    }

    @Test
    void captureReadsHostPortAndDatabaseFromTheUrlUnlessOverridden() {
        CaptureSettings fromUrl = Settings.capture(config());
        CaptureSettings overridden = Settings.capture(config("outbox.capture.enabled", "true",
                "outbox.capture.mode", "postgres-logical", "outbox.capture.connection.host", "replica",
                "outbox.capture.connection.port", "5433", "outbox.capture.connection.database", "orders_ro",
                "outbox.capture.connection.username", "cdc"));

        assertThat(fromUrl.fingerprint().host()).isEqualTo("db-1");
        assertThat(fromUrl.port()).isEqualTo(6543);
        assertThat(fromUrl.fingerprint().database()).isEqualTo("orders");
        assertThat(fromUrl.active()).isFalse();
        assertThat(overridden.fingerprint().host()).isEqualTo("replica");
        assertThat(overridden.port()).isEqualTo(5433);
        assertThat(overridden.fingerprint().database()).isEqualTo("orders_ro");
        assertThat(overridden.mode()).isEqualTo(CaptureMode.POSTGRES_LOGICAL);
        assertThat(overridden.active()).isTrue();
        assertThat(overridden.fingerprint().slot()).isEqualTo("queuebox_slot");
    }

    @Test
    void captureAccountFallsBackFromItsOwnKeysToTheDatabaseAccountToTheUrl() {
        assertThat(Settings.captureAccount(config("outbox.capture.connection.username", "cdc",
                "outbox.capture.connection.password", "c1", "database.username", "app", "database.password", "a1")))
                .isEqualTo(new Settings.Account("cdc", "c1"));
        assertThat(Settings.captureAccount(config("database.username", "app", "database.password", "a1")))
                .isEqualTo(new Settings.Account("app", "a1"));
        Settings.Account fromUrl = Settings.captureAccount(QueueBoxConfig.of(Map.of("broker.type", "kafka",
                "database.url", "jdbc:postgresql://db/app?user=relay&password=p%40ss")));
        assertThat(fromUrl).isEqualTo(new Settings.Account("relay", "p@ss"));
        assertThat(fromUrl.toString()).doesNotContain("p@ss");
    }

    @Test
    void activeCaptureWithoutAnyAccountIsAConfigurationProblem() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> QueueBoxConfig.of(Map.of("broker.type", "kafka",
                        "database.url", "jdbc:postgresql://db/app", "outbox.capture.enabled", "true",
                        "outbox.capture.mode", "postgres-logical")))
                .hasMessageContaining("outbox.capture.connection.username: capture needs an account");
    }

    @Test
    void theCapturePasswordDefaultsToTheDatabasePasswordWhenOnlyTheCaptureUserIsSet() {
        assertThat(Settings.captureAccount(config("outbox.capture.connection.username", "cdc",
                "database.username", "app", "database.password", "a1")))
                .isEqualTo(new Settings.Account("cdc", "a1"));
    }

    @Test
    void everythingCaptureDoesOnTheDatabaseGoesToTheCaptureConnection() {
        assertThat(Settings.captureUrl(config())).as("no override: the database URL itself")
                .isEqualTo("jdbc:postgresql://db-1:6543,db-2:6543/orders?ssl=true");
        assertThat(Settings.captureUrl(config("outbox.capture.connection.host", "replica",
                "outbox.capture.connection.database", "orders_ro")))
                .isEqualTo("jdbc:postgresql://replica:6543/orders_ro?ssl=true");
        assertThat(Settings.captureUrl(QueueBoxConfig.of(Map.of("broker.type", "kafka", "database.url",
                "jdbc:sqlserver://mssql:1433;databaseName=shop;encrypt=true", "outbox.capture.connection.host", "mssql-ro"))))
                .isEqualTo("jdbc:sqlserver://mssql-ro:1433;encrypt=true;databaseName=shop");
    }

    @Test
    void onSqlServerTheFingerprintHasNoSlotOrPublicationAndTheSchemaDefaultsToDbo() {
        QueueBoxConfig config = QueueBoxConfig.of(Map.of("broker.type", "kafka", "database.url",
                "jdbc:sqlserver://mssql:1433;databaseName=shop", "database.username", "relay",
                "outbox.capture.enabled", "true", "outbox.capture.mode", "sqlserver-cdc"));

        CaptureSettings capture = Settings.capture(config);

        assertThat(capture.mode()).isEqualTo(CaptureMode.SQLSERVER_CDC);
        assertThat(capture.fingerprint()).isEqualTo(new CaptureFingerprint("", "", "dbo", "queuebox_outbox", "mssql", "shop"));
        assertThat(capture.port()).isEqualTo(1433);
        assertThat(config.optional(Keys.CAPTURE_SLOT)).as("a PostgreSQL key has no value on SQL Server").isEmpty();
    }
}
