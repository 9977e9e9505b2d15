package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SqlServerOutboxSettingsTest {

    @Test
    void defaultsAreDboQueueboxOutbox() {
        SqlServerOutboxSettings settings = SqlServerOutboxSettings.defaults();
        assertThat(settings.qualifiedTable()).isEqualTo("[dbo].[queuebox_outbox]");
        assertThat(settings.qualifiedCaptureStateTable()).isEqualTo("[dbo].[queuebox_capture_state]");
        assertThat(settings.maxPayloadBytes()).isEqualTo(1024 * 1024);
        assertThat(settings.deleteOnSend()).isFalse();
        assertThat(settings.holdRowLocks()).as("claims write leases unless asked").isFalse();
    }

    @Test
    void holdRowLocksIsKeptAndShown() {
        SqlServerOutboxSettings settings = SqlServerOutboxSettings.builder().holdRowLocks(true).build();
        assertThat(settings.holdRowLocks()).isTrue();
        assertThat(settings.toString()).contains("holdRowLocks=true");
    }

    @Test
    void pascalCaseNamesAreKeptAsGiven() {
        SqlServerOutboxSettings settings = SqlServerOutboxSettings.builder().schema("Sales").table("OrderOutbox").build();
        assertThat(settings.qualifiedTable()).isEqualTo("[Sales].[OrderOutbox]");
        assertThat(settings.displayName()).isEqualTo("Sales.OrderOutbox");
    }

    @ParameterizedTest
    @ValueSource(strings = {"outbox; drop table x", "outbox]; drop table x; --", "a b", "1outbox", "", "out-box",
        "[outbox]", "outbox'"})
    void aTableThatIsNotAPlainIdentifierIsRefusedNamingTheKey(String table) {
        assertThatThrownBy(() -> SqlServerOutboxSettings.builder().table(table))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("outbox.table: '" + table + "' is not a valid identifier");
    }

    @Test
    void aSchemaThatIsNotAPlainIdentifierIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> SqlServerOutboxSettings.builder().schema("outbox; drop table x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("outbox.schema: 'outbox; drop table x' is not a valid identifier");
        assertThatThrownBy(() -> SqlServerOutboxSettings.builder().schema(null))
                .isInstanceOf(NullPointerException.class).hasMessage("outbox.schema");
    }

    @Test
    void namesLongerThanTheirIndexNamesAllowAreRefused() {
        SqlServerOutboxSettings.builder().table("t".repeat(100)).schema("s".repeat(128));
        assertThatThrownBy(() -> SqlServerOutboxSettings.builder().table("t".repeat(101)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outbox.table").hasMessageContaining("1-100");
        assertThatThrownBy(() -> SqlServerOutboxSettings.builder().schema("s".repeat(129)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outbox.schema");
    }

    @Test
    void aPayloadLimitBelowOneIsRefused() {
        assertThatThrownBy(() -> SqlServerOutboxSettings.builder().maxPayloadBytes(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("outbox.maxPayloadBytes");
    }
}
