package io.queuebox.bootstrap.console;

import io.queuebox.domain.CaptureStatus.FaultReason;
import java.util.EnumMap;
import java.util.Map;

/**
 * Each capture fault in words with its recovery step, as the table "Recover from a fault" of
 * docs/how-to/capture-changes.md gives them (CaptureRecoveryTest keeps every fault covered).
 */
public final class CaptureRecovery {

    /** Where the console links for the whole story. */
    public static final String HOW_TO = "docs/how-to/capture-changes.md#5-recover-from-a-fault";

    /** What happened and what to do, for a person. */
    public record Advice(String whatHappened, String recovery) {
    }

    private static final Map<FaultReason, Advice> ADVICE = new EnumMap<>(FaultReason.class);

    static {
        ADVICE.put(FaultReason.STATE_MISSING, new Advice(
                "The state directory is empty, but queuebox_capture_state records an identity.",
                "Mount the right volume and restart. If it is lost and the settings are the same, recreate it with"
                        + " 'queuebox capture adopt --identity ID' and restart; to start fresh, reset every identity"
                        + " the message names ('queuebox capture reset --identity ID --confirm') and restart."));
        ADVICE.put(FaultReason.FOREIGN_STATE, new Advice(
                "The state files belong to another instance.",
                "Mount this instance's volume, or reset the identity to start fresh."));
        ADVICE.put(FaultReason.SETTINGS_CHANGED, new Advice(
                "Slot, publication, schema, table, host, database or mode changed; the message names which.",
                "Revert the setting, or reset the identity and restart with the new settings. Drop the old slot by"
                        + " hand if you no longer use it."));
        ADVICE.put(FaultReason.SLOT_MISSING, new Advice(
                "The replication slot was dropped while the state remains.",
                "Reset the identity and restart: the connector creates a new slot. Nothing is lost: delivery reads"
                        + " the table."));
        ADVICE.put(FaultReason.IDENTITY_OWNED, new Advice(
                "Another process holds the identity's lock.",
                "Stop the other owner, or set outbox.capture.enabled: false here."));
        ADVICE.put(FaultReason.STATE_DIRECTORY_NOT_WRITABLE, new Advice(
                "The state directory cannot be written; the message names the path and the user.",
                "Fix the ownership (chown queuebox /var/lib/queuebox/capture) and restart."));
        ADVICE.put(FaultReason.SOURCE_NOT_READY, new Advice(
                "The database is not set up for capture (publication, wal_level, CDC or the Agent).",
                "Do what the message says, then restart."));
        ADVICE.put(FaultReason.OWNERSHIP_LOST, new Advice(
                "The database session that held the identity's lock ended while capture ran.",
                "Nothing, usually: capture takes the lock again after the restart backoff (1 s up to 30 s) and"
                        + " resumes. If another process took it meanwhile, the fault becomes IDENTITY_OWNED."));
    }

    private CaptureRecovery() {
    }

    public static Advice of(FaultReason reason) {
        return ADVICE.get(reason);
    }
}
