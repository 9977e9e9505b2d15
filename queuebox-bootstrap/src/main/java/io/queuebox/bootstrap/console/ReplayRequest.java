package io.queuebox.bootstrap.console;

import com.fasterxml.jackson.databind.JsonNode;
import io.queuebox.bootstrap.console.Console.BadRequest;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Which parked events a replay (or its dry run) means: one event, one aggregate, or every parked event that a
 * filter matches. The body names its {@code scope}, so that a body missing a field is refused rather than read as
 * "everything".
 */
sealed interface ReplayRequest {

    record OneEvent(UUID eventId) implements ReplayRequest {
        @Override
        public String describe() {
            return "event " + eventId;
        }
    }

    record OneAggregate(String aggregateType, String aggregateId) implements ReplayRequest {
        @Override
        public String describe() {
            return "aggregate " + aggregateType + "/" + aggregateId;
        }
    }

    record Matching(Filter filter) implements ReplayRequest {
        @Override
        public String describe() {
            return "every parked event matching " + filter.describe();
        }
    }

    /** For the log and the answer: what was meant, in words. */
    String describe();

    static ReplayRequest parse(JsonNode body) {
        String scope = text(body, "scope").orElseThrow(() -> new BadRequest("scope: required, one of event, aggregate, filter"));
        return switch (scope) {
            case "event" -> {
                String id = text(body, "eventId").orElseThrow(() -> new BadRequest("eventId: required with scope event"));
                try {
                    yield new OneEvent(UUID.fromString(id));
                } catch (IllegalArgumentException e) {
                    throw new BadRequest("eventId: not a UUID");
                }
            }
            case "aggregate" -> new OneAggregate(
                    text(body, "aggregateType").orElseThrow(() -> new BadRequest("aggregateType: required with scope aggregate")),
                    text(body, "aggregateId").orElseThrow(() -> new BadRequest("aggregateId: required with scope aggregate")));
            case "filter" -> new Matching(new Filter(text(body, "aggregateType"), text(body, "aggregateId"),
                    text(body, "error")));
            default -> throw new BadRequest("scope: one of event, aggregate, filter");
        };
    }

    private static Optional<String> text(JsonNode body, String field) {
        JsonNode node = body.get(field);
        if (node == null || node.isNull()) {
            return Optional.empty();
        }
        if (!node.isTextual()) {
            throw new BadRequest(field + ": a string");
        }
        // Never trimmed: " 42" is another aggregate than "42", and a replay takes exactly the one chosen.
        return Optional.of(node.asText()).filter(value -> !value.isEmpty());
    }

    /**
     * The parked list's filters: aggregate type and id (exact), and text the last error contains (any case).
     * Empty fields match everything.
     */
    record Filter(Optional<String> aggregateType, Optional<String> aggregateId, Optional<String> error) {

        static Filter fromQuery(Map<String, String> query) {
            return new Filter(present(query.get("aggregateType")), present(query.get("aggregateId")),
                    present(query.get("error")));
        }

        /** As given, untrimmed: an identifier's spaces are part of it (as in a replay's body). */
        private static Optional<String> present(String value) {
            return Optional.ofNullable(value).filter(v -> !v.isEmpty());
        }

        /** The store's own selector when it says it all; else every parked row, filtered here. */
        ReplaySelector selector() {
            return aggregateType.isPresent() && aggregateId.isPresent()
                    ? ReplaySelector.aggregate(aggregateType.get(), aggregateId.get()) : ReplaySelector.allParked();
        }

        /** Whether the store's selector alone chooses the same rows (no filtering here needed). */
        boolean storeSelects() {
            return error.isEmpty() && aggregateType.isPresent() == aggregateId.isPresent();
        }

        boolean matches(ParkedEvent parked) {
            return aggregateType.map(parked.event().aggregateType()::equals).orElse(true)
                    && aggregateId.map(parked.event().aggregateId()::equals).orElse(true)
                    && error.map(text -> parked.lastError() != null && parked.lastError().toLowerCase(Locale.ROOT)
                            .contains(text.toLowerCase(Locale.ROOT))).orElse(true);
        }

        String describe() {
            return "aggregateType=" + aggregateType.orElse("*") + ", aggregateId=" + aggregateId.orElse("*")
                    + ", error contains " + error.map(e -> "'" + e + "'").orElse("anything");
        }
    }
}
