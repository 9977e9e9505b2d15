package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class CoRunBoundTest {

    private static Run run(double rowsPerSecond, Double machineMsPerThousand) {
        return new Run(rowsPerSecond, null, null, machineMsPerThousand, null);
    }

    @Test
    void theCoresSpentPerRowByTheFloorAndTheBrokerTogetherBoundARelayThatDoesBoth() {
        // 2 cores, 100 ms/s of them busy at idle: 1,900 ms/s to spend; 19 + 19 ms per 1,000 rows fit 50,000 rows/s.
        CoRunBound bound = CoRunBound.of(run(90_000, 19.0), run(70_000, 19.0), 2, 100);

        assertThat(bound.cpuBoundRowsPerSecond()).isCloseTo(50_000, within(0.001));
        assertThat(bound.rowsPerSecond()).isCloseTo(50_000, within(0.001));
    }

    @Test
    void whenTheCoresAreNotTheLimitTheSlowerOfTheTwoAloneIs() {
        CoRunBound bound = CoRunBound.of(run(90_000, 2.0), run(7_000, 8.0), 2, 0);

        assertThat(bound.cpuBoundRowsPerSecond()).isCloseTo(200_000, within(0.001));
        assertThat(bound.rowsPerSecond()).isEqualTo(7_000);
    }

    @Test
    void withoutTheMachineCpuThereIsNoBound() {
        assertThat(CoRunBound.of(run(90_000, null), run(70_000, 10.0), 2, 0)).isNull();
    }
}
