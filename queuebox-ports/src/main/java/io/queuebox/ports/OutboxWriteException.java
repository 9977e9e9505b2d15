package io.queuebox.ports;

/** The database refused to store outbox events; the message names the table or the value at fault. */
public class OutboxWriteException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public OutboxWriteException(String message, Throwable cause) {
        super(message, cause);
    }
}
