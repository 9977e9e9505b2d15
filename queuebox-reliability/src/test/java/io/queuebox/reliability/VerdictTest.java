package io.queuebox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The suite is only as good as its judge: each kind of broken promise must show in the verdict. */
class VerdictTest {

    private final UUID a1 = UUID.randomUUID();
    private final UUID a2 = UUID.randomUUID();
    private final UUID b1 = UUID.randomUUID();
    private final UUID rolledBack = UUID.randomUUID();
    private final Map<UUID, Verdict.Row> table = Map.of(
            a1, new Verdict.Row("a", 1), a2, new Verdict.Row("a", 3), b1, new Verdict.Row("b", 2));

    private static Receipts.Receipt got(UUID id, long at) {
        return new Receipts.Receipt(id, "?", false, at);
    }

    @Test
    void everyCommittedEventOnceInOrderHolds() {
        Verdict verdict = Verdict.judge("s", table, Map.of(a1, 0L, a2, 0L, b1, 0L), Set.of(rolledBack),
                List.of(got(b1, 1), got(a1, 2), got(a2, 3)), 0);
        assertThat(verdict.holds()).isTrue();
        assertThat(verdict.delivered()).isEqualTo(3);
        assertThat(verdict.rolledBack()).isEqualTo(1);
    }

    @Test
    void aMissingEventIsLost() {
        Verdict verdict = Verdict.judge("s", table, Map.of(), Set.of(), List.of(got(a1, 1), got(b1, 2)), 0);
        assertThat(verdict.lost()).isEqualTo(1);
        assertThat(verdict.holds()).isFalse();
    }

    @Test
    void aCommitTheProducerSawThatIsNotInTheTableIsLost() {
        UUID vanished = UUID.randomUUID();
        Verdict verdict = Verdict.judge("s", table, Map.of(vanished, 0L), Set.of(),
                List.of(got(a1, 1), got(a2, 2), got(b1, 3)), 0);
        assertThat(verdict.lost()).isEqualTo(1);
    }

    @Test
    void aRolledBackEventReceivedIsAPhantom() {
        Verdict verdict = Verdict.judge("s", table, Map.of(), Set.of(rolledBack),
                List.of(got(a1, 1), got(a2, 2), got(b1, 3), got(rolledBack, 4)), 0);
        assertThat(verdict.phantoms()).isEqualTo(1);
        assertThat(verdict.holds()).isFalse();
    }

    @Test
    void aLaterEventOfAnAggregateFirstIsAnOrderViolationButALateCopyIsOnlyADuplicate() {
        Verdict reordered = Verdict.judge("s", table, Map.of(), Set.of(), List.of(got(a2, 1), got(a1, 2), got(b1, 3)), 0);
        assertThat(reordered.orderViolations()).isEqualTo(1);
        assertThat(reordered.holds()).isFalse();

        Verdict copied = Verdict.judge("s", table, Map.of(), Set.of(),
                List.of(got(a1, 1), got(a2, 2), got(a1, 3), got(b1, 4)), 0);
        assertThat(copied.orderViolations()).isZero();
        assertThat(copied.duplicates()).isEqualTo(1);
        assertThat(copied.holds()).isTrue();
    }

    @Test
    void theConsumersOwnRedeliveryIsNotCountedAsTheRelaysDuplicate() {
        Verdict verdict = Verdict.judge("s", table, Map.of(), Set.of(),
                List.of(got(a1, 1), new Receipts.Receipt(a1, "a", true, 2), got(a2, 3), got(b1, 4)), 0);
        assertThat(verdict.duplicates()).isZero();
        assertThat(verdict.consumerRedeliveries()).isEqualTo(1);
    }

    @Test
    void drainIsTimedFromTheFaultsEndToTheLastEventCommittedBeforeIt() {
        long second = 1_000_000_000L;
        Verdict verdict = Verdict.judge("s", table, Map.of(a1, 0L, a2, 5 * second, b1, 20 * second), Set.of(),
                List.of(got(a1, 11 * second), got(a2, 13 * second), got(b1, 21 * second)), 10 * second);
        assertThat(verdict.drainSeconds()).isEqualTo(3.0);
    }
}
