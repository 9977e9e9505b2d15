package io.queuebox.archfixture.bad.embed;

import io.queuebox.archfixture.bad.bootstrap.Main;
import org.junit.jupiter.api.Assertions;

/** An embedding builder that reaches into the runnable jar's CLI and a test framework. */
public final class BuilderUsingTheCli {
    public String settings() {
        Assertions.assertNotNull(this);
        return Main.settings();
    }
}
