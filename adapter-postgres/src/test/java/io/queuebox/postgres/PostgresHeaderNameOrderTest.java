package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ParkingPolicy;
import io.queuebox.ports.ReplaySelector;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The reason a row is parked for its headers names them in the order the claim took them apart in: before cf37699,
 * jsonb_each_text ordered by key in the database's collation (C.UTF-8 here: code points). Java's Arrays.sort orders
 * UTF-16 units, which puts a supplementary character (😀, U+1F600) before U+E000..U+FFFF (Ａ, U+FF21).
 */
class PostgresHeaderNameOrderTest {

    @Test
    void theReasonNamesTheHeadersAsTheDatabaseOrdersThem() {
        try (TestDatabase db = TestDatabase.withFreshSchema("nameorder")) {
            PostgresOutboxSettings settings = db.settings().holdRowLocks(true).build();
            PostgresOutbox.createSchema(db.dataSource, settings);
            OutboxStore store = PostgresOutbox.store(db.dataSource, settings);
            UUID nulls = insert(db, settings, "a", "{\"\uFF21\": null, \"\uD83D\uDE00\": null}");
            UUID blank = insert(db, settings, "b", "{\" \": \"x\", \"\uFF21\": \"1\", \"\uD83D\uDE00\": \"2\"}");

            assertThat(store.claim(new ClaimRequest("relay", 10, Duration.ofMinutes(1), Ordering.NONE,
                    ParkingPolicy.CONTINUE_AGGREGATE)).deliveries()).isEmpty();

            Map<UUID, String> parked = store.parked(ReplaySelector.allParked(), 10).stream()
                    .collect(Collectors.toMap(p -> p.event().eventId(), ParkedEvent::lastError));
            // What 2b66105 wrote (SQL ORDER BY key under the database collation).
            assertThat(parked.get(nulls)).startsWith("header '\uFF21' is JSON null, not a string;");
            assertThat(parked.get(blank)).contains("got: [ , \uFF21, \uD83D\uDE00]");
        }
    }

    private static UUID insert(TestDatabase db, PostgresOutboxSettings settings, String aggregateId, String headers) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + settings.qualifiedTable() + " (event_id, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) VALUES ('" + id + "', 'order', '" + aggregateId + "', 'OrderPlaced', '\\x7b7d', '"
                + headers + "')");
        return id;
    }
}
