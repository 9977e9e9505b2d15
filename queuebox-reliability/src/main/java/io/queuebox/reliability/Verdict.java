package io.queuebox.reliability;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * What one scenario shows, judged from what the consumer received against what the table holds: the rows
 * in the table are the committed events (a rolled-back transaction leaves none).
 *
 * @param lost           committed events never received, plus events whose commit the producer saw succeed
 *                       and that are missing from the table
 * @param phantoms       received events that no committed transaction wrote
 * @param orderViolations first deliveries of an aggregate's event after a later event of it
 * @param duplicates     copies the relay sent more than once (the consumer's own redeliveries excluded)
 * @param drainSeconds   from the end of the fault until every event committed before it was received
 */
record Verdict(String scenario, long committed, long rolledBack, long delivered, long lost, long phantoms,
               long orderViolations, long duplicates, long consumerRedeliveries, double drainSeconds) {

    /** A committed row as the table holds it. */
    record Row(String aggregateId, long seq) {
    }

    boolean holds() {
        return lost == 0 && phantoms == 0 && orderViolations == 0;
    }

    static Verdict judge(String scenario, Map<UUID, Row> table, Map<UUID, Long> committedAt, Set<UUID> rolledBack,
                         List<Receipts.Receipt> receipts, long faultEndNanos) {
        Set<UUID> seen = new HashSet<>();
        Map<String, Long> lastSeq = new HashMap<>();
        Map<UUID, Long> firstReceivedAt = new HashMap<>();
        long phantoms = 0;
        long orderViolations = 0;
        long duplicates = 0;
        long redeliveries = 0;
        Set<UUID> phantomIds = new HashSet<>();
        for (Receipts.Receipt receipt : receipts) {
            if (!seen.add(receipt.eventId())) {
                if (receipt.redelivered()) {
                    redeliveries++;
                } else {
                    duplicates++;
                }
                continue;
            }
            firstReceivedAt.put(receipt.eventId(), receipt.receivedAt());
            Row row = table.get(receipt.eventId());
            if (row == null) {
                if (phantomIds.add(receipt.eventId())) {
                    phantoms++;
                }
                continue;
            }
            Long previous = lastSeq.get(row.aggregateId());
            if (previous != null && row.seq() < previous) {
                orderViolations++;
            } else {
                lastSeq.put(row.aggregateId(), row.seq());
            }
        }
        long lost = table.keySet().stream().filter(id -> !seen.contains(id)).count()
                + committedAt.keySet().stream().filter(id -> !table.containsKey(id)).count();
        long delivered = table.keySet().stream().filter(seen::contains).count();
        long lastBeforeFaultEnd = faultEndNanos;
        for (Map.Entry<UUID, Long> commit : committedAt.entrySet()) {
            Long received = firstReceivedAt.get(commit.getKey());
            if (commit.getValue() <= faultEndNanos && received != null) {
                lastBeforeFaultEnd = Math.max(lastBeforeFaultEnd, received);
            }
        }
        double drain = (lastBeforeFaultEnd - faultEndNanos) / 1e9;
        return new Verdict(scenario, table.size(), rolledBack.size(), delivered, lost, phantoms, orderViolations,
                duplicates, redeliveries, Math.round(drain * 10) / 10.0);
    }
}
