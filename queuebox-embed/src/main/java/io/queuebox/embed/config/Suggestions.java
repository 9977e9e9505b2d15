package io.queuebox.embed.config;

import java.util.Collection;
import java.util.Comparator;
import java.util.Locale;
import java.util.Optional;
import org.apache.commons.text.similarity.LevenshteinDistance;

/** Finds the known name a mistyped one most likely meant. */
final class Suggestions {

    private Suggestions() {
    }

    /**
     * The candidate closest to {@code name} by edit distance, compared case-insensitively so that
     * {@code outbox.batchsize} finds {@code outbox.batchSize}; empty when none is close enough to help
     * (more than a third of the name would have to change).
     */
    static Optional<String> closest(String name, Collection<String> candidates) {
        String lower = name.toLowerCase(Locale.ROOT);
        int threshold = Math.max(2, lower.length() / 3);
        LevenshteinDistance distance = new LevenshteinDistance(threshold);
        return candidates.stream()
                .map(candidate -> new Scored(candidate, distance.apply(lower, candidate.toLowerCase(Locale.ROOT))))
                .filter(scored -> scored.distance >= 0)
                .min(Comparator.comparingInt(Scored::distance).thenComparing(Scored::candidate))
                .map(Scored::candidate);
    }

    private record Scored(String candidate, int distance) {
    }
}
