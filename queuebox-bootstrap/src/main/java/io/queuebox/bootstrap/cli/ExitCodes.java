package io.queuebox.bootstrap.cli;

/** The process exit codes, as documented in docs/operations.md. */
public final class ExitCodes {

    /** Finished normally (including a stop by SIGTERM or SIGINT within the shutdown deadline). */
    public static final int OK = 0;
    /** A fatal error: anything not covered by a more specific code. */
    public static final int FATAL = 1;
    /** The configuration or the command line is invalid; every problem was printed. */
    public static final int BAD_CONFIGURATION = 2;
    /** The database did not answer within {@code startup.databaseWaitMs}. */
    public static final int DATABASE_UNREACHABLE = 3;

    private ExitCodes() {
    }
}
