package io.queuebox.bootstrap.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.domain.CaptureStatus.FaultReason;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CaptureRecoveryTest {

    @Test
    void everyFaultHasWordsAndARecoveryStepAndTheHowToListsIt() throws Exception {
        String howTo = Files.readString(Path.of("..", "docs", "how-to", "capture-changes.md"));

        for (FaultReason fault : FaultReason.values()) {
            CaptureRecovery.Advice advice = CaptureRecovery.of(fault);
            assertThat(advice).as("advice for %s", fault).isNotNull();
            assertThat(advice.whatHappened()).as(fault.name()).isNotBlank();
            assertThat(advice.recovery()).as(fault.name()).isNotBlank();
            assertThat(howTo).as("the how-to's recovery table lists %s", fault).contains("| `" + fault.name() + "` |");
        }
        assertThat(howTo).contains("## 5. Recover from a fault");
    }
}
