package io.queuebox.bootstrap.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * {@code demo} in a jar without the demo module: the production jar carries no embedded database or broker, so it
 * points to the jar that does instead of failing with "unknown command".
 */
@Command(name = "demo", description = "Not in this jar: run the demo with queuebox-demo.jar (see docs/tutorials/demo.md).")
final class MissingDemoCommand implements Callable<Integer> {

    static final String MESSAGE = "the demo is not part of queuebox.jar (the production jar carries no embedded"
            + " database or broker); run it from the demo jar: java -jar queuebox-demo/target/queuebox-demo.jar demo"
            + " (built by ./mvnw -B -DskipTests package; see docs/tutorials/demo.md)";

    @Unmatched
    String[] ignored;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().getErr().println(MESSAGE);
        spec.commandLine().getErr().flush();
        return ExitCodes.BAD_CONFIGURATION;
    }
}
