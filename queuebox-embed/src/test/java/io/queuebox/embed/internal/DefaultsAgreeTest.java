package io.queuebox.embed.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.domain.DeliverySettings;
import io.queuebox.embed.config.QueueBoxConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * One set of defaults: the jar and the starter (configuration keys left unset) deliver exactly as
 * {@code QueueBox.builder()} does without {@code settings(...)}, that is as {@link DeliverySettings#defaults()}.
 */
class DefaultsAgreeTest {

    @Test
    void unsetKeysGiveTheLibrarysDeliveryDefaults() {
        QueueBoxConfig config = QueueBoxConfig.of(Map.of("database.url", "jdbc:postgresql://127.0.0.1:5432/test",
                "broker.type", "kafka"));

        DeliverySettings fromKeys = Settings.delivery(config, Settings.Wakes.POLL);

        // The owner is the one difference by design: the jar names claims after host and process.
        assertThat(fromKeys.toBuilder().owner(DeliverySettings.DEFAULT_OWNER).build())
                .isEqualTo(DeliverySettings.defaults());
    }
}
