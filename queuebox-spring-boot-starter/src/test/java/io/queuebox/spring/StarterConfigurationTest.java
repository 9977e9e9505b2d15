package io.queuebox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.domain.DeliverySettings;
import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import io.queuebox.testkit.services.TestServices;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The starter's {@code queuebox.*} properties are the jar's keys: the same defaults, the same validation with
 * the key named, relaxed Spring names, and a clear refusal of the keys that only the jar has. The outbox schema
 * does not exist, so the relay these contexts start never claims anyone's rows.
 */
class StarterConfigurationTest {

    private final ApplicationContextRunner contexts = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, QueueBoxAutoConfiguration.class))
            .withPropertyValues("spring.datasource.url=" + TestServices.postgresUrl(),
                    "queuebox.migrate=false",
                    "queuebox.outbox.schema=qb_spring_absent",
                    "queuebox.broker.type=rabbitmq",
                    "queuebox.broker.rabbitmq.uri=" + TestServices.rabbitMqUri(),
                    "queuebox.broker.rabbitmq.exchange=qb_spring_absent");

    @Test
    void unsetPropertiesTakeTheJarsDefaultsWhichAreTheLibrarys() {
        contexts.run(context -> {
            assertThat(context).hasNotFailed();
            QueueBoxConfig config = context.getBean(QueueBoxConfig.class);
            assertThat(config.integer(Keys.OUTBOX_BATCH_SIZE)).isEqualTo(DeliverySettings.DEFAULT_BATCH_SIZE).isEqualTo(100);
            assertThat(config.integer(Keys.OUTBOX_WORKERS)).isEqualTo(DeliverySettings.DEFAULT_WORKERS);
            assertThat(config.millis(Keys.OUTBOX_POLL_INTERVAL_MS)).isEqualTo(DeliverySettings.DEFAULT_WAKE_INTERVAL);
            assertThat(context).hasSingleBean(TransactionalOutboxWriter.class).hasSingleBean(QueueBoxRelay.class)
                    .hasBean("outboxHealthIndicator").hasBean("outboxCaptureHealthIndicator");
        });
    }

    @Test
    void relaxedNamesReachTheirKeys() {
        contexts.withPropertyValues("queuebox.outbox.batch-size=7", "queuebox.outbox.retry.maxAttempts=3",
                        "queuebox.outbox.purge.batchsize=50")
                .run(context -> {
                    QueueBoxConfig config = context.getBean(QueueBoxConfig.class);
                    assertThat(config.integer(Keys.OUTBOX_BATCH_SIZE)).isEqualTo(7);
                    assertThat(config.integer(Keys.RETRY_MAX_ATTEMPTS)).isEqualTo(3);
                    assertThat(config.integer(Keys.PURGE_BATCH_SIZE)).isEqualTo(50);
                });
    }

    @Test
    void aBadValueStopsTheStartNamingThePropertyAndWhatIsAllowed() {
        contexts.withPropertyValues("queuebox.outbox.batch-size=0", "queuebox.outbox.ordering=random")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("2 configuration problem(s)")
                        .hasMessageContaining("queuebox.outbox.batchSize")
                        .hasMessageContaining("an integer from 1 to 10000")
                        .hasMessageContaining("queuebox.outbox.ordering")
                        .hasMessageContaining("per-aggregate, none"));
    }

    @Test
    void anUnknownPropertyIsRefusedWithTheClosestKey() {
        contexts.withPropertyValues("queuebox.outbox.batchSise=10")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("queuebox.outbox.batchSise")
                        .hasMessageContaining("did you mean outbox.batchSize?"));
    }

    @Test
    void keysOnlyTheJarHasAreRefusedWithWhatToUseInstead() {
        contexts.withPropertyValues("queuebox.http.port=9000", "queuebox.database.password=s3cret",
                        "queuebox.outbox.capture.enabled=true")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("queuebox.http.port")
                        .hasMessageContaining("management.*")
                        .hasMessageContaining("spring.datasource.*")
                        .hasMessageContaining("capture runs in queuebox.jar")
                        .hasMessageNotContaining("s3cret"));
    }

    @Test
    void closingTheContextStopsTheRelay() {
        QueueBoxRelay[] relay = new QueueBoxRelay[1];
        contexts.withPropertyValues("queuebox.shutdown.deadline-ms=2000").run(context -> {
            relay[0] = context.getBean(QueueBoxRelay.class);
            assertThat(relay[0].isRunning()).isTrue();
        });
        assertThat(relay[0].isRunning()).isFalse();
    }

    @Test
    void theStarterCanBeSwitchedOff() {
        contexts.withPropertyValues("queuebox.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(QueueBoxRelay.class));
    }
}
