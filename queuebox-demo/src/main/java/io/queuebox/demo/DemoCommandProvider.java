package io.queuebox.demo;

import io.queuebox.bootstrap.cli.CommandProvider;

/** Adds {@code demo} to the command line of the jar this module is shaded into. */
public final class DemoCommandProvider implements CommandProvider {

    @Override
    public String name() {
        return "demo";
    }

    @Override
    public Object command() {
        return new DemoCommand();
    }
}
