package io.queuebox.ports;

import java.util.Collection;
import java.util.Locale;

/**
 * The known setting an unknown one most likely meant, for the "did you mean" of a refused key: every broker
 * adapter (a custom one too) refuses unknown settings this way, so an operator reads the same kind of hint.
 */
public final class SettingNames {

    private SettingNames() {
    }

    /** The closest candidate by edit distance (case-insensitive), or null when more than a third would change. */
    public static String closest(String name, Collection<String> candidates) {
        String lower = name.toLowerCase(Locale.ROOT);
        int threshold = Math.max(2, lower.length() / 3);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : candidates) {
            int distance = distance(lower, candidate.toLowerCase(Locale.ROOT));
            if (distance <= threshold && (distance < bestDistance
                    || (distance == bestDistance && candidate.compareTo(best) < 0))) {
                best = candidate;
                bestDistance = distance;
            }
        }
        return best;
    }

    /** "; did you mean 'x'?" or nothing. */
    public static String suggestion(String name, Collection<String> candidates) {
        String closest = closest(name, candidates);
        return closest == null ? "" : "; did you mean '" + closest + "'?";
    }

    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }
}
