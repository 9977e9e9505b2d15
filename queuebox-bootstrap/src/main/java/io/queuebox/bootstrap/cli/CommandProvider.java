package io.queuebox.bootstrap.cli;

/**
 * A subcommand that lives outside the runnable jar and joins the command line when its module is on the class
 * path, listed in {@code META-INF/services/io.queuebox.bootstrap.cli.CommandProvider}. This is how
 * {@code queuebox-demo.jar} adds {@code demo} without the production jar carrying the demo's embedded servers.
 */
public interface CommandProvider {

    /** The subcommand's name as typed, for example {@code demo}. */
    String name();

    /** A new picocli command object (annotated with {@code @Command}) for one execution of the command line. */
    Object command();
}
