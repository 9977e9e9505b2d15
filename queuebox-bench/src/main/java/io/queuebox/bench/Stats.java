package io.queuebox.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/** The arithmetic of the report, kept pure so that it is tested: medians over repetitions, ratios, CPU per event. */
final class Stats {

    private Stats() {
    }

    /**
     * The median of the values that are present (nulls are runs that measured nothing); the mean of the two
     * middle values for an even count (to three decimals); null when no value is present.
     */
    static Double median(Collection<? extends Number> values) {
        List<Double> present = new ArrayList<>();
        for (Number value : values) {
            if (value != null && !Double.isNaN(value.doubleValue())) {
                present.add(value.doubleValue());
            }
        }
        if (present.isEmpty()) {
            return null;
        }
        present.sort(null);
        int n = present.size();
        return n % 2 == 1 ? present.get(n / 2) : round((present.get(n / 2 - 1) + present.get(n / 2)) / 2, 3);
    }

    /** {@code value ÷ reference} to three decimals; null when either is missing or the reference is not positive. */
    static Double ratio(Number value, Number reference) {
        if (value == null || reference == null || reference.doubleValue() <= 0) {
            return null;
        }
        return round(value.doubleValue() / reference.doubleValue(), 3);
    }

    /**
     * CPU milliseconds per 1,000 events from a CPU-time delta in nanoseconds; null when nothing was delivered or
     * the platform does not report CPU time (a negative delta).
     */
    static Double cpuMsPerThousand(long cpuNanos, long events) {
        if (events <= 0 || cpuNanos < 0) {
            return null;
        }
        return round(cpuNanos / 1e6 / events * 1000, 2);
    }

    /**
     * {@link #cpuMsPerThousand} after taking off what the process spends idle over the same wall time
     * ({@code idleNanosPerSecond × wallNanos}); never below zero.
     */
    static Double cpuMsPerThousandAboveIdle(long cpuNanos, long wallNanos, double idleNanosPerSecond, long events) {
        if (cpuNanos < 0) {
            return null;
        }
        long idle = (long) (idleNanosPerSecond * wallNanos / 1e9);
        return cpuMsPerThousand(Math.max(0, cpuNanos - idle), events);
    }

    static double round(double value, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(value * scale) / scale;
    }

    /** The values of {@code key} in each repetition's row, in order. */
    static List<Number> column(List<? extends java.util.Map<String, Object>> rows, String key) {
        List<Number> values = new ArrayList<>();
        for (java.util.Map<String, Object> row : rows) {
            Object value = row.get(key);
            values.add(value instanceof Number number ? number : null);
        }
        return values;
    }

    static Long sum(List<Number> values) {
        return values.stream().filter(Objects::nonNull).mapToLong(Number::longValue).sum();
    }
}
