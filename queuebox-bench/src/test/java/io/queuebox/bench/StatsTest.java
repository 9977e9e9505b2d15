package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StatsTest {

    @Test
    void theMedianOfAnOddCountIsTheMiddleValueWhateverTheOrder() {
        assertThat(Stats.median(List.of(30.0, 10.0, 20.0))).isEqualTo(20.0);
    }

    @Test
    void theMedianOfAnEvenCountIsTheMeanOfTheTwoMiddleValues() {
        assertThat(Stats.median(List.of(4, 1, 3, 2))).isEqualTo(2.5);
        assertThat(Stats.median(List.of(12.7, 13.1))).isEqualTo(12.9);
    }

    @Test
    void runsThatMeasuredNothingAreLeftOutOfTheMedian() {
        assertThat(Stats.median(Arrays.asList(null, 5.0, Double.NaN, 7.0, 9.0))).isEqualTo(7.0);
        assertThat(Stats.median(Arrays.asList((Double) null))).isNull();
        assertThat(Stats.median(List.of())).isNull();
    }

    @Test
    void aRatioIsRoundedToThreeDecimalsAndNeedsAPositiveReference() {
        assertThat(Stats.ratio(2, 3)).isEqualTo(0.667);
        assertThat(Stats.ratio(15433, 22347)).isEqualTo(0.691);
        assertThat(Stats.ratio(1, 0)).isNull();
        assertThat(Stats.ratio(null, 3)).isNull();
        assertThat(Stats.ratio(1, null)).isNull();
    }

    @Test
    void cpuPerThousandEventsIsMillisecondsOfCpuPerThousandEvents() {
        // 1.5 s of CPU for 20,000 events = 75 ms per 1,000.
        assertThat(Stats.cpuMsPerThousand(1_500_000_000L, 20_000)).isEqualTo(75.0);
        assertThat(Stats.cpuMsPerThousand(1_234_567L, 1_000)).isEqualTo(1.23);
    }

    @Test
    void cpuAboveIdleTakesOffTheIdleRateOverTheSameWallTime() {
        // 1.5 s of CPU in 10 s of wall time, idle at 50 ms per second: 1.0 s above idle for 20,000 events.
        assertThat(Stats.cpuMsPerThousandAboveIdle(1_500_000_000L, 10_000_000_000L, 50_000_000, 20_000)).isEqualTo(50.0);
        // Never below zero: a quiet window can spend less than the idle measurement did.
        assertThat(Stats.cpuMsPerThousandAboveIdle(100_000_000L, 10_000_000_000L, 50_000_000, 1_000)).isEqualTo(0.0);
        assertThat(Stats.cpuMsPerThousandAboveIdle(-1L, 10_000_000_000L, 50_000_000, 1_000)).isNull();
    }

    @Test
    void noCpuFigureWithoutEventsOrWithoutAPlatformCpuClock() {
        assertThat(Stats.cpuMsPerThousand(1_000_000L, 0)).isNull();
        assertThat(Stats.cpuMsPerThousand(-1L, 1_000)).isNull();
    }

    @Test
    void aColumnKeepsTheRepetitionsInOrderWithGapsAsNull() {
        List<Map<String, Object>> rows = List.of(Map.of("p50Ms", 12.0), Map.of("events", 3), Map.of("p50Ms", 14.5));
        assertThat(Stats.column(rows, "p50Ms")).containsExactly(12.0, null, 14.5);
        assertThat(Stats.sum(Stats.column(rows, "events"))).isEqualTo(3L);
    }

    @Test
    void theCpuMeterReportsTheProcessCpuSpentSinceItStarted() {
        Cpu cpu = Cpu.start();
        long spin = 0;
        long until = System.nanoTime() + 50_000_000L;
        while (System.nanoTime() < until) {
            spin += Long.numberOfTrailingZeros(System.nanoTime());
        }
        assertThat(spin).isNotNegative();
        assertThat(cpu.elapsedNanos()).isGreaterThan(10_000_000L);
        assertThat(cpu.msPerThousand(1_000)).isGreaterThan(10.0);
    }
}
