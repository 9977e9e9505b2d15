package io.queuebox.jdbc;

import java.util.Objects;

/**
 * Host, port and database of a JDBC URL: where capture connects unless {@code outbox.capture.connection.*}
 * says otherwise, and the host and database of the capture fingerprint.
 */
public record DatabaseLocation(String host, int port, String database) {

    public DatabaseLocation {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(database, "database");
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("port must be 1-65535, got: " + port);
        }
    }
}
