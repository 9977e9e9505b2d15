package io.queuebox.ports;

import java.util.List;
import java.util.OptionalLong;

/**
 * What the database says about the capture source.
 *
 * @param slotExists       whether the replication slot (PostgreSQL) exists; true where the database has none
 * @param retainedLogBytes write-ahead log the slot holds back, where known
 * @param problems         each a sentence naming what is missing and how to fix it (publication missing,
 *                         publication does not cover the outbox table, {@code wal_level} not logical, CDC
 *                         not enabled, Agent not running); empty when capture can start
 */
public record CaptureSourceReport(boolean slotExists, OptionalLong retainedLogBytes, List<String> problems) {
    public CaptureSourceReport {
        problems = List.copyOf(problems);
    }

    public boolean ready() {
        return problems.isEmpty();
    }
}
