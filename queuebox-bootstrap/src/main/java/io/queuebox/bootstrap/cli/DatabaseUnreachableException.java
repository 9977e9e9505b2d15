package io.queuebox.bootstrap.cli;

/** The database did not answer within the start deadline; the process exits with {@link ExitCodes#DATABASE_UNREACHABLE}. */
public final class DatabaseUnreachableException extends RuntimeException {

    public DatabaseUnreachableException(String message, Throwable cause) {
        super(message, cause);
    }
}
