package io.queuebox.bootstrap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The production jar has no demo on its class path: {@code demo} says where it is instead of "unknown command". */
class MissingDemoCommandTest {

    @Test
    void demoWithoutTheDemoModulePointsToTheDemoJar() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();

        int exit = Cli.execute(Map.of(), new PrintWriter(out, true), new PrintWriter(err, true), "demo", "--rate", "5");

        assertThat(exit).isEqualTo(ExitCodes.BAD_CONFIGURATION);
        assertThat(err.toString()).contains("queuebox-demo.jar demo", "docs/tutorials/demo.md");
    }
}
