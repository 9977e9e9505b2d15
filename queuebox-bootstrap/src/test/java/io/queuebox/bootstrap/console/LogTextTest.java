package io.queuebox.bootstrap.console;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LogTextTest {

    @Test
    void aNewlineInClientTextCannotStartALogLineOfItsOwn() {
        String forged = "quota')\n2026-11-30T22:00:00Z INFO  console: replayed 0 parked event(s) (nothing";

        String escaped = LogText.escape(forged);

        assertThat(escaped).doesNotContain("\n").contains("quota')\\n2026-11-30");
    }

    @Test
    void otherControlCharactersBecomeVisibleAndPlainTextStaysAsItIs() {
        assertThat(LogText.escape("a\r\tb\u001b[2Jc\u2028d")).isEqualTo("a\\r\\tb\\u001b[2Jc\\u2028d");
        assertThat(LogText.escape("order/ 42 ü")).isEqualTo("order/ 42 ü");
        assertThat(LogText.escape("a\\nb")).as("a backslash cannot fake an escape").isEqualTo("a\\\\nb");
    }
}
