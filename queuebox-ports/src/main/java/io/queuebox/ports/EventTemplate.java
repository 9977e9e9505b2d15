package io.queuebox.ports;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A name made from an event, such as a topic, an exchange or a routing key: a text in which
 * {@code {aggregateType}}, {@code {aggregateId}} and {@code {eventType}} stand for the event's values. Parsed
 * once, rendered per message in one pass: a publisher renders one or more per message, and replacing each
 * placeholder in turn cost several string copies per message. A value is inserted as it is (a value that
 * contains a placeholder's text is not expanded again). Other text, braces included, is kept.
 */
public final class EventTemplate {

    private enum Placeholder {
        AGGREGATE_TYPE("{aggregateType}"), AGGREGATE_ID("{aggregateId}"), EVENT_TYPE("{eventType}");

        private final String text;

        Placeholder(String text) {
            this.text = text;
        }

        String of(OutboxEvent event) {
            return switch (this) {
                case AGGREGATE_TYPE -> event.aggregateType();
                case AGGREGATE_ID -> event.aggregateId();
                case EVENT_TYPE -> event.eventType();
            };
        }
    }

    private final String text;
    // literals[i] comes before placeholders[i]; the last literal ends the name.
    private final String[] literals;
    private final Placeholder[] placeholders;

    private EventTemplate(String text, String[] literals, Placeholder[] placeholders) {
        this.text = text;
        this.literals = literals;
        this.placeholders = placeholders;
    }

    public static EventTemplate parse(String text) {
        Objects.requireNonNull(text, "text");
        List<String> literals = new ArrayList<>();
        List<Placeholder> placeholders = new ArrayList<>();
        int literalStart = 0;
        int at = text.indexOf('{');
        while (at >= 0) {
            Placeholder found = null;
            for (Placeholder placeholder : Placeholder.values()) {
                if (text.startsWith(placeholder.text, at)) {
                    found = placeholder;
                    break;
                }
            }
            if (found == null) {
                at = text.indexOf('{', at + 1);
            } else {
                literals.add(text.substring(literalStart, at));
                placeholders.add(found);
                literalStart = at + found.text.length();
                at = text.indexOf('{', literalStart);
            }
        }
        literals.add(text.substring(literalStart));
        return new EventTemplate(text, literals.toArray(String[]::new), placeholders.toArray(Placeholder[]::new));
    }

    /** The name for {@code event}. */
    public String render(OutboxEvent event) {
        if (placeholders.length == 0) {
            return text;
        }
        StringBuilder name = new StringBuilder(text.length() + 32);
        for (int i = 0; i < placeholders.length; i++) {
            name.append(literals[i]).append(placeholders[i].of(event));
        }
        return name.append(literals[placeholders.length]).toString();
    }

    /** The template as configured. */
    @Override
    public String toString() {
        return text;
    }
}
