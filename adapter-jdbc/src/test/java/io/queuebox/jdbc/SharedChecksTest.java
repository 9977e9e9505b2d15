package io.queuebox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The shared checks word their messages as both SQL adapters did, naming the key or argument. */
class SharedChecksTest {

    private static final Pattern LOWER = Pattern.compile("[a-z_][a-z0-9_]{0,9}");

    @Test
    void anIdentifierThatDoesNotMatchIsRefusedNamingTheKeyAndTheAllowedLetters() {
        assertThat(SettingChecks.identifier("outbox.table", "events_1", LOWER, 10, "lower-case letters"))
                .isEqualTo("events_1");
        assertThatThrownBy(() -> SettingChecks.identifier("outbox.table", "Events", LOWER, 10, "lower-case letters"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("outbox.table: 'Events' is not a valid identifier: use 1-10 lower-case letters, digits"
                        + " or '_', starting with a letter or '_'");
        assertThatThrownBy(() -> SettingChecks.identifier("outbox.schema", null, LOWER, 10, "letters"))
                .isInstanceOf(NullPointerException.class).hasMessage("outbox.schema");
    }

    @Test
    void aCountBelowOneIsRefused() {
        assertThat(SettingChecks.atLeastOne("outbox.maxPayloadBytes", 1)).isEqualTo(1);
        assertThatThrownBy(() -> SettingChecks.atLeastOne("outbox.maxPayloadBytes", 0))
                .hasMessage("outbox.maxPayloadBytes: must be at least 1, got: 0");
        assertThatThrownBy(() -> StoreArguments.atLeastOne("limit", 0)).hasMessage("limit must be >= 1, got: 0");
    }

    @Test
    void storeArgumentsOutsideTheContractAreRefused() {
        assertThatThrownBy(() -> StoreArguments.leaseLength(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("leaseLength must be positive, got: PT0S");
        assertThatThrownBy(() -> StoreArguments.purge(Duration.ofSeconds(-1), 10))
                .hasMessage("retention must not be negative, got: PT-1S");
        assertThatThrownBy(() -> StoreArguments.purge(Duration.ZERO, 0)).hasMessage("maxRows must be >= 1, got: 0");
        assertThatThrownBy(() -> StoreArguments.purge(null, 1)).hasMessage("retention");
    }

    @Test
    void headersSurviveTheJsonRoundTripWithKeysSorted() {
        String json = Json.object(Map.of("b", "x\"\n", "a", "\u0001"));
        assertThat(json).isEqualTo("{\"a\":\"\\u0001\",\"b\":\"x\\\"\\n\"}");
        assertThat(Json.parseObject(json)).containsExactlyInAnyOrderEntriesOf(Map.of("b", "x\"\n", "a", "\u0001"));
        assertThat(Json.array(List.of(1, "two"))).isEqualTo("[\"1\",\"two\"]");
    }

    @Test
    void scriptsRenderTheirPlaceholdersAndRefuseUnknownOnes() {
        FlywayScripts scripts = new FlywayScripts(getClass().getClassLoader(), "db/queuebox/fixture",
                List.of("V1__fixture.sql"), List::of);
        assertThat(scripts.render("V1__fixture.sql", "app", "events"))
                .contains("CREATE TABLE app.events (id int);");
        assertThatThrownBy(() -> scripts.render("V2__unknown.sql", "app", "events"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("unknown placeholder ${queuebox_unknown} in V2__unknown.sql");
        assertThatThrownBy(() -> scripts.render("V9__missing.sql", "app", "events"))
                .hasMessage("missing resource db/queuebox/fixture/V9__missing.sql");
    }
}
