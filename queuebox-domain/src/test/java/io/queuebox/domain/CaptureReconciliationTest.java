package io.queuebox.domain;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.domain.CaptureReconciliation.Decision;
import io.queuebox.domain.CaptureReconciliation.Fault;
import io.queuebox.domain.CaptureReconciliation.FaultReason;
import io.queuebox.domain.CaptureReconciliation.Resume;
import io.queuebox.domain.CaptureReconciliation.StartFresh;
import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CaptureReconciliationTest {

    private static final CaptureIdentity X = new CaptureIdentity("x-1");
    private static final CaptureIdentity FRESH = new CaptureIdentity("fresh-2");
    private static final CaptureFingerprint SETTINGS =
            new CaptureFingerprint("queuebox_slot", "queuebox_pub", "public", "outbox", "db.local", "shop");
    private static final CaptureMode PG = CaptureMode.POSTGRES_LOGICAL;

    private static CaptureStateRecord aRowFor(CaptureIdentity identity, CaptureFingerprint fingerprint) {
        return new CaptureStateRecord(identity, PG, fingerprint, Instant.parse("2026-01-01T00:00:00Z"),
                Instant.parse("2026-01-02T00:00:00Z"));
    }

    /** Inputs of one start, healthy by default; each test changes what it is about. */
    private static final class Start {
        List<CaptureStateRecord> rows = List.of(aRowFor(X, SETTINGS));
        Optional<CaptureIdentity> identityFile = Optional.of(X);
        boolean hasOffsets = true;
        CaptureFingerprint fingerprint = SETTINGS;
        CaptureMode mode = PG;
        boolean slotExists = true;
        boolean lockAcquired = true;

        Decision decide() {
            return CaptureReconciliation.decide(rows, identityFile, hasOffsets, fingerprint, mode, slotExists,
                    lockAcquired, FRESH);
        }
    }

    private static Start aRestartOfX() {
        return new Start();
    }

    private static Start aFirstStart() {
        Start start = new Start();
        start.rows = List.of();
        start.identityFile = Optional.empty();
        start.hasOffsets = false;
        return start;
    }

    @Test
    void matchingFilesRowAndSettingsResume() {
        assertThat(aRestartOfX().decide()).isEqualTo(new Resume(X));
    }

    @Test
    void anIdentityWithoutOffsetsYetResumes() {
        Start start = aRestartOfX();
        start.hasOffsets = false;
        start.slotExists = false;

        assertThat(start.decide()).isEqualTo(new Resume(X));
    }

    @Test
    void sqlServerHasNoSlotAndResumes() {
        Start start = aRestartOfX();
        start.mode = CaptureMode.SQLSERVER_CDC;
        start.rows = List.of(new CaptureStateRecord(X, CaptureMode.SQLSERVER_CDC, SETTINGS, Instant.EPOCH,
                Instant.EPOCH));

        assertThat(start.decide()).isEqualTo(new Resume(X));
    }

    @Test
    void aFirstStartStartsFreshWithTheNewIdentity() {
        assertThat(aFirstStart().decide()).isEqualTo(new StartFresh(FRESH));
    }

    /** Issue 13: a row of other settings is still a capture that ran, so an empty volume must not start fresh. */
    @Test
    void anEmptyDirectoryWithARowOfOtherSettingsIsStateMissingNamingTheChangedSettings() {
        Start start = aFirstStart();
        start.rows = List.of(aRowFor(X, new CaptureFingerprint("old_slot", "queuebox_pub", "public", "outbox",
                "old.local", "shop")));

        Fault fault = (Fault) start.decide();

        assertThat(fault.reason()).isEqualTo(FaultReason.STATE_MISSING);
        assertThat(fault.message()).isEqualTo("the volume is missing or empty, but the database says capture ran"
                + " before as identity x-1, with other settings than now: slot (was 'old_slot', now 'queuebox_slot'),"
                + " host (was 'old.local', now 'db.local')");
    }

    @Test
    void anEmptyDirectoryWithARowOfAnotherModeIsStateMissing() {
        Start start = aFirstStart();
        start.rows = List.of(new CaptureStateRecord(X, CaptureMode.SQLSERVER_CDC, SETTINGS, Instant.EPOCH,
                Instant.EPOCH));

        Fault fault = (Fault) start.decide();

        assertThat(fault.reason()).isEqualTo(FaultReason.STATE_MISSING);
        assertThat(fault.message()).endsWith("with other settings than now: mode (was 'sqlserver-cdc', now"
                + " 'postgres-logical')");
    }

    @Test
    void anEmptyDirectoryWithRowsOfOtherSettingsIsStateMissingEvenWhenTheLockIsHeldElsewhere() {
        Start start = aFirstStart();
        start.rows = List.of(aRowFor(X, new CaptureFingerprint("old_slot", "queuebox_pub", "public", "outbox",
                "db.local", "shop")));
        start.lockAcquired = false;

        assertThat(((Fault) start.decide()).reason()).isEqualTo(FaultReason.STATE_MISSING);
    }

    @Test
    void settingsChangedNamesEveryChangedSetting() {
        Start start = aRestartOfX();
        start.fingerprint = new CaptureFingerprint("other_slot", "queuebox_pub", "public", "outbox", "replica.local",
                "shop");

        Fault fault = (Fault) start.decide();

        assertThat(fault.reason()).isEqualTo(FaultReason.SETTINGS_CHANGED);
        assertThat(fault.message()).contains("x-1").contains("slot (was 'queuebox_slot', now 'other_slot')")
                .contains("host (was 'db.local', now 'replica.local')")
                .doesNotContain("publication").doesNotContain("database (");
    }

    @Test
    void aChangedModeIsAChangedSetting() {
        Start start = aRestartOfX();
        start.mode = CaptureMode.SQLSERVER_CDC;

        Fault fault = (Fault) start.decide();

        assertThat(fault.reason()).isEqualTo(FaultReason.SETTINGS_CHANGED);
        assertThat(fault.message()).contains("mode (was 'postgres-logical', now 'sqlserver-cdc')");
    }

    @Test
    void aMissingSlotWithOffsetsIsSlotMissing() {
        Start start = aRestartOfX();
        start.slotExists = false;

        Fault fault = (Fault) start.decide();

        assertThat(fault.reason()).isEqualTo(FaultReason.SLOT_MISSING);
        assertThat(fault.message()).contains("queuebox_slot").contains("x-1");
    }

    @Test
    void settingsChangedIsReportedBeforeAMissingSlot() {
        Start start = aRestartOfX();
        start.slotExists = false;
        start.fingerprint = new CaptureFingerprint("other_slot", "queuebox_pub", "public", "outbox", "db.local",
                "shop");

        assertThat(((Fault) start.decide()).reason()).isEqualTo(FaultReason.SETTINGS_CHANGED);
    }

    @Test
    void aLockHeldElsewhereMeansTheIdentityIsOwned() {
        Start start = aRestartOfX();
        start.lockAcquired = false;

        assertThat(start.decide())
                .isEqualTo(new Fault(FaultReason.IDENTITY_OWNED, "the identity x-1 already has an owner"));
    }

    @Test
    void aFreshIdentityNeedsItsLockToo() {
        Start start = aFirstStart();
        start.lockAcquired = false;

        assertThat(start.decide())
                .isEqualTo(new Fault(FaultReason.IDENTITY_OWNED, "the identity fresh-2 already has an owner"));
    }

    @Test
    void filesOfAnIdentityWithoutARowAreForeignState() {
        Start start = aRestartOfX();
        start.rows = List.of(aRowFor(new CaptureIdentity("someone-else"), SETTINGS));

        Fault fault = (Fault) start.decide();

        assertThat(fault.reason()).isEqualTo(FaultReason.FOREIGN_STATE);
        assertThat(fault.message()).startsWith("the state files belong to a different instance").contains("x-1");
    }

    @Test
    void offsetsWithoutAnIdentityFileAreForeignState() {
        Start start = aFirstStart();
        start.hasOffsets = true;

        assertThat(((Fault) start.decide()).reason()).isEqualTo(FaultReason.FOREIGN_STATE);
    }

    @Test
    void anEmptyVolumeWhereCaptureRanBeforeIsStateMissing() {
        Start start = aRestartOfX();
        start.identityFile = Optional.empty();
        start.hasOffsets = false;

        assertThat(start.decide()).isEqualTo(new Fault(FaultReason.STATE_MISSING,
                "the volume is missing or empty, but the database says capture ran before as identity x-1"));
    }

    @Test
    void stateMissingNamesEveryRecordedIdentityTheMostRecentFirst() {
        Start start = aFirstStart();
        CaptureIdentity older = new CaptureIdentity("older");
        start.rows = List.of(new CaptureStateRecord(older, PG, new CaptureFingerprint("old_slot", "queuebox_pub",
                        "public", "outbox", "db.local", "shop"), Instant.EPOCH, Instant.EPOCH),
                aRowFor(X, SETTINGS));

        assertThat(((Fault) start.decide()).message()).isEqualTo("the volume is missing or empty, but the database"
                + " says capture ran before as identities x-1 (last run 2026-01-02T00:00:00Z, the current settings),"
                + " older (last run 1970-01-01T00:00:00Z, with other settings than now: slot (was 'old_slot', now"
                + " 'queuebox_slot'))");
    }

    @Test
    void theSettingsChangesOfARowAreNamedForOperatorCommands() {
        CaptureStateRecord row = aRowFor(X, new CaptureFingerprint("old_slot", "queuebox_pub", "public", "outbox",
                "db.local", "shop"));

        assertThat(CaptureReconciliation.settingsChanges(row, SETTINGS, PG))
                .containsExactly("slot (was 'old_slot', now 'queuebox_slot')");
        assertThat(CaptureReconciliation.settingsChanges(aRowFor(X, SETTINGS), SETTINGS, PG)).isEmpty();
    }

    @Test
    void theLockIsTakenForTheFilesIdentityElseTheFreshOne() {
        assertThat(CaptureReconciliation.identityToLock(Optional.of(X), FRESH)).isEqualTo(X);
        assertThat(CaptureReconciliation.identityToLock(Optional.empty(), FRESH)).isEqualTo(FRESH);
    }
}
