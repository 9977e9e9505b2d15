package io.queuebox.domain;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The capture-state reconciliation at start, as a pure decision: compare the rows of
 * {@code queuebox_capture_state}, the state directory and the current settings, and answer resume,
 * start fresh, or a named fault that needs an operator.
 *
 * <p>The rules, in order:
 * <ol>
 *   <li>Offsets exist but no identity file: {@link FaultReason#FOREIGN_STATE}.</li>
 *   <li>The identity file names {@code X} and no row for {@code X} exists: {@link FaultReason#FOREIGN_STATE}.</li>
 *   <li>The identity file names {@code X} and a row for {@code X} exists:
 *     <ol>
 *       <li>the fingerprint (or the mode) differs from the row's: {@link FaultReason#SETTINGS_CHANGED},
 *           naming every changed setting;</li>
 *       <li>else, in {@link CaptureMode#POSTGRES_LOGICAL} with offsets present, the replication slot is
 *           gone: {@link FaultReason#SLOT_MISSING};</li>
 *       <li>else the lock for {@code X} was not acquired: {@link FaultReason#IDENTITY_OWNED};</li>
 *       <li>else {@link Resume} {@code X}.</li>
 *     </ol></li>
 *   <li>The directory is empty (no identity, no offsets) and the table has any row, whatever its
 *       fingerprint or mode: {@link FaultReason#STATE_MISSING}, naming every recorded identity and, for each
 *       whose settings differ from the current ones, the settings that differ. Only an operator knows whether
 *       the volume was lost (restore it, or adopt the identity) or the identity is retired (reset it, which
 *       deletes its row).</li>
 *   <li>Otherwise (an empty directory and an empty table): {@link StartFresh} with the fresh identity, if
 *       its lock was acquired; else {@link FaultReason#IDENTITY_OWNED}.</li>
 * </ol>
 *
 * <p>The caller takes the lock before deciding, for {@link #identityToLock} (the file's identity, or
 * the fresh one), and releases it again unless the decision is {@link Resume} or {@link StartFresh}.
 */
public final class CaptureReconciliation {

    private CaptureReconciliation() {
    }

    /** The identity whose lock the caller must try before {@link #decide}: the file's, else the fresh one. */
    public static CaptureIdentity identityToLock(Optional<CaptureIdentity> fileIdentity, CaptureIdentity freshIdentity) {
        return fileIdentity.orElse(Objects.requireNonNull(freshIdentity, "freshIdentity"));
    }

    /**
     * Decides how capture starts.
     *
     * @param records       every row of {@code queuebox_capture_state}
     * @param fileIdentity  the identity file's content, if the file exists
     * @param hasOffsets    whether the directory holds offsets or schema history
     * @param fingerprint   the current capture settings
     * @param mode          the current capture mode
     * @param slotExists    whether the replication slot exists (PostgreSQL); true where the database has none
     * @param lockAcquired  whether the lock for {@link #identityToLock} was acquired
     * @param freshIdentity the identity to use when capture starts fresh (normally {@link CaptureIdentity#random()})
     */
    public static Decision decide(List<CaptureStateRecord> records, Optional<CaptureIdentity> fileIdentity,
                                  boolean hasOffsets, CaptureFingerprint fingerprint, CaptureMode mode,
                                  boolean slotExists, boolean lockAcquired, CaptureIdentity freshIdentity) {
        Objects.requireNonNull(records, "records");
        Objects.requireNonNull(fileIdentity, "fileIdentity");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(freshIdentity, "freshIdentity");

        if (fileIdentity.isEmpty() && hasOffsets) {
            return new Fault(FaultReason.FOREIGN_STATE, "the state files belong to a different instance: the state"
                    + " directory holds offsets but no identity file");
        }
        if (fileIdentity.isPresent()) {
            CaptureIdentity identity = fileIdentity.get();
            Optional<CaptureStateRecord> row = records.stream().filter(r -> r.identity().equals(identity)).findFirst();
            if (row.isEmpty()) {
                return new Fault(FaultReason.FOREIGN_STATE, "the state files belong to a different instance: the"
                        + " state directory names identity " + identity + ", which never ran against this database");
            }
            List<String> changes = settingsChanges(row.get(), fingerprint, mode);
            if (!changes.isEmpty()) {
                return new Fault(FaultReason.SETTINGS_CHANGED, "the capture settings changed since identity "
                        + identity + " last ran, so its recorded offsets are meaningless: " + String.join(", ", changes));
            }
            if (mode == CaptureMode.POSTGRES_LOGICAL && hasOffsets && !slotExists) {
                return new Fault(FaultReason.SLOT_MISSING, "the replication slot '" + fingerprint.slot()
                        + "' is missing, but the state directory holds offsets of identity " + identity);
            }
            if (!lockAcquired) {
                return owned(identity);
            }
            return new Resume(identity);
        }
        if (!records.isEmpty()) {
            return stateMissing(records, fingerprint, mode);
        }
        if (!lockAcquired) {
            return owned(freshIdentity);
        }
        return new StartFresh(freshIdentity);
    }

    /**
     * Any recorded identity counts, whatever its settings: an empty volume next to a row of other settings is
     * as likely a lost volume plus a changed setting as it is a new capture, and only the operator knows which.
     */
    private static Fault stateMissing(List<CaptureStateRecord> records, CaptureFingerprint fingerprint,
                                      CaptureMode mode) {
        List<CaptureStateRecord> latestFirst = records.stream()
                .sorted(Comparator.comparing(CaptureStateRecord::lastRunAt).reversed()
                        .thenComparing(r -> r.identity().value()))
                .toList();
        String ranAs;
        if (latestFirst.size() == 1) {
            CaptureStateRecord row = latestFirst.get(0);
            List<String> changes = settingsChanges(row, fingerprint, mode);
            ranAs = "identity " + row.identity()
                    + (changes.isEmpty() ? "" : ", with other settings than now: " + String.join(", ", changes));
        } else {
            List<String> identities = new ArrayList<>();
            for (CaptureStateRecord row : latestFirst) {
                List<String> changes = settingsChanges(row, fingerprint, mode);
                identities.add(row.identity() + " (last run " + row.lastRunAt() + ", "
                        + (changes.isEmpty() ? "the current settings"
                                : "with other settings than now: " + String.join(", ", changes)) + ")");
            }
            ranAs = "identities " + String.join(", ", identities);
        }
        return new Fault(FaultReason.STATE_MISSING, "the volume is missing or empty, but the database says capture"
                + " ran before as " + ranAs);
    }

    private static Fault owned(CaptureIdentity identity) {
        return new Fault(FaultReason.IDENTITY_OWNED, "the identity " + identity + " already has an owner");
    }

    /**
     * The settings of {@code row} that differ from the current ones, each as {@code name (was 'old', now 'new')},
     * the mode first, then in {@link CaptureFingerprint#differencesFrom} order; empty when nothing changed.
     */
    public static List<String> settingsChanges(CaptureStateRecord row, CaptureFingerprint current, CaptureMode mode) {
        Objects.requireNonNull(row, "row");
        Objects.requireNonNull(current, "current");
        Objects.requireNonNull(mode, "mode");
        List<String> changes = new ArrayList<>();
        if (row.mode() != mode) {
            changes.add("mode (was '" + row.mode().configName() + "', now '" + mode.configName() + "')");
        }
        CaptureFingerprint was = row.fingerprint();
        for (String setting : was.differencesFrom(current)) {
            changes.add(setting + " (was '" + valueOf(was, setting) + "', now '" + valueOf(current, setting) + "')");
        }
        return changes;
    }

    private static String valueOf(CaptureFingerprint fingerprint, String setting) {
        switch (setting) {
            case "slot": return fingerprint.slot();
            case "publication": return fingerprint.publication();
            case "schema": return fingerprint.schema();
            case "table": return fingerprint.table();
            case "host": return fingerprint.host();
            case "database": return fingerprint.database();
            default: throw new IllegalArgumentException("unknown fingerprint setting: " + setting);
        }
    }

    /** Why capture cannot start without an operator's decision. */
    public enum FaultReason {
        /** The state directory is missing or empty, but the database says capture ran before. */
        STATE_MISSING,
        /** The state files belong to a different instance (or offsets exist without an identity). */
        FOREIGN_STATE,
        /** A setting that gives the recorded offsets their meaning changed. */
        SETTINGS_CHANGED,
        /** The PostgreSQL replication slot disappeared while the state remains. */
        SLOT_MISSING,
        /** Another process holds the lock of the identity. */
        IDENTITY_OWNED
    }

    /** The outcome of {@link #decide}. */
    public sealed interface Decision {
    }

    /** Resume capture from the recorded offsets of {@code identity}. */
    public record Resume(CaptureIdentity identity) implements Decision {
        public Resume {
            Objects.requireNonNull(identity, "identity");
        }
    }

    /** Start capture from a fresh snapshot as the new {@code identity}; write its identity file and row. */
    public record StartFresh(CaptureIdentity identity) implements Decision {
        public StartFresh {
            Objects.requireNonNull(identity, "identity");
        }
    }

    /** Do not start capture; report {@code message}. Delivery carries on through SQL. */
    public record Fault(FaultReason reason, String message) implements Decision {
        public Fault {
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(message, "message");
        }
    }
}
