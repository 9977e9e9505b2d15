package io.queuebox.bootstrap.internal;

/** The database did not answer within the start deadline; the process exits with exit code 3. */
public final class DatabaseUnreachableException extends RuntimeException {

    public DatabaseUnreachableException(String message, Throwable cause) {
        super(message, cause);
    }
}
