package io.queuebox.inbox;

/** The database refused an inbox statement; the message names the inbox table and the database's reason. */
public final class InboxDatabaseException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    InboxDatabaseException(String message, Throwable cause) {
        super(message, cause);
    }
}
