package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PostgresOutboxSettingsTest {

    @Test
    void defaultsAreThePublicQueueboxOutboxWithOneMebibytePayloads() {
        PostgresOutboxSettings settings = PostgresOutboxSettings.defaults();
        assertThat(settings.schema()).isEqualTo("public");
        assertThat(settings.table()).isEqualTo("queuebox_outbox");
        assertThat(settings.maxPayloadBytes()).isEqualTo(1024 * 1024);
        assertThat(settings.deleteOnSend()).isFalse();
        assertThat(settings.holdRowLocks()).as("claims hold row locks by default").isTrue();
        assertThat(settings.qualifiedTable()).isEqualTo("\"public\".\"queuebox_outbox\"");
    }

    @Test
    void theStoreChecksPayloadSizesOnlyAgainstALimitThatWasSet() {
        assertThat(PostgresOutboxSettings.defaults().claimPayloadLimit()).isEmpty();
        PostgresOutboxSettings set = PostgresOutboxSettings.builder().maxPayloadBytes(4 * 1024 * 1024).build();
        assertThat(set.maxPayloadBytes()).isEqualTo(4 * 1024 * 1024);
        assertThat(set.claimPayloadLimit()).hasValue(4 * 1024 * 1024);
        assertThat(PostgresOutboxSettings.builder().maxPayloadBytes(1024 * 1024).build().claimPayloadLimit())
                .as("set to the default's value is still set").hasValue(1024 * 1024);
    }

    @Test
    void aTableNameWithSqlInItIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().table("outbox; drop table x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("outbox.table: 'outbox; drop table x' is not a valid identifier");
    }

    @Test
    void aSchemaNameWithAQuoteIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().schema("public\".x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("outbox.schema: 'public\".x' is not a valid identifier");
    }

    @Test
    void upperCaseEmptyAndOverlongNamesAreRefused() {
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().table("Outbox"))
                .hasMessageStartingWith("outbox.table:");
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().table(""))
                .hasMessageStartingWith("outbox.table:");
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().table("t".repeat(49)))
                .hasMessageStartingWith("outbox.table:");
        assertThat(PostgresOutboxSettings.builder().table("t".repeat(48)).build().table()).hasSize(48);
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().schema("1abc"))
                .hasMessageStartingWith("outbox.schema:");
    }

    @Test
    void aPayloadLimitBelowOneIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> PostgresOutboxSettings.builder().maxPayloadBytes(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("outbox.maxPayloadBytes:");
    }
}
