package io.queuebox.testkit.capture;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code queuebox_capture_state} table in memory, its times read from an injected "database clock".
 * Thread-safe.
 */
public final class InMemoryCaptureStateStore implements CaptureStateStore {

    private final Clock clock;
    private final Map<CaptureIdentity, CaptureStateRecord> records = new LinkedHashMap<>();
    private final Map<CaptureIdentity, Status> statuses = new LinkedHashMap<>();

    public InMemoryCaptureStateStore(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** A store on the system UTC clock. */
    public static InMemoryCaptureStateStore create() {
        return new InMemoryCaptureStateStore(Clock.systemUTC());
    }

    /** A table that already holds {@code record}, as if an earlier run had written it. */
    public static InMemoryCaptureStateStore holding(Clock clock, CaptureStateRecord record) {
        InMemoryCaptureStateStore store = new InMemoryCaptureStateStore(clock);
        store.records.put(record.identity(), record);
        return store;
    }

    @Override
    public synchronized List<CaptureStateRecord> findAll() {
        return List.copyOf(records.values());
    }

    @Override
    public synchronized void recordStart(CaptureIdentity identity, CaptureMode mode, CaptureFingerprint fingerprint) {
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(fingerprint, "fingerprint");
        var now = clock.instant();
        CaptureStateRecord existing = records.get(identity);
        // Like the SQL upsert: a known identity keeps what it first ran with; only the last run moves.
        records.put(identity, existing == null
                ? new CaptureStateRecord(identity, mode, fingerprint, now, now)
                : new CaptureStateRecord(identity, existing.mode(), existing.fingerprint(), existing.firstRunAt(), now));
    }

    @Override
    public synchronized void recordStatus(CaptureIdentity identity, String state, String faultReason) {
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(state, "state");
        if (records.containsKey(identity)) {
            statuses.put(identity, new Status(state, faultReason));
        }
    }

    @Override
    public synchronized boolean forget(CaptureIdentity identity) {
        statuses.remove(identity);
        return records.remove(identity) != null;
    }

    /** The state and fault reason last recorded for an identity, if any. */
    public synchronized Optional<Status> statusOf(CaptureIdentity identity) {
        return Optional.ofNullable(statuses.get(identity));
    }

    /**
     * A recorded status.
     *
     * @param faultReason null when there is no fault
     */
    public record Status(String state, String faultReason) {
    }
}
