package io.queuebox.ports;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The capture settings that give recorded log positions their meaning. If any of them changes, the
 * recorded offsets point into another stream and must not be trusted.
 *
 * @param slot        replication slot (PostgreSQL) or capture instance (SQL Server)
 * @param publication publication (PostgreSQL); empty string where the database has none
 * @param schema      schema of the outbox table
 * @param table       outbox table name
 * @param host        database host capture connects to
 * @param database    database name
 */
public record CaptureFingerprint(String slot, String publication, String schema, String table, String host,
                                 String database) {
    public CaptureFingerprint {
        Objects.requireNonNull(slot, "slot");
        Objects.requireNonNull(publication, "publication");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(database, "database");
    }

    /** The names of the settings that differ between this fingerprint and {@code other}, in a stable order. */
    public List<String> differencesFrom(CaptureFingerprint other) {
        List<String> changed = new ArrayList<>();
        if (!slot.equals(other.slot)) changed.add("slot");
        if (!publication.equals(other.publication)) changed.add("publication");
        if (!schema.equals(other.schema)) changed.add("schema");
        if (!table.equals(other.table)) changed.add("table");
        if (!host.equals(other.host)) changed.add("host");
        if (!database.equals(other.database)) changed.add("database");
        return changed;
    }

    /** A single-line encoding, stable across versions, for storing in the state table. */
    public String encode() {
        return String.join("|", slot, publication, schema, table, host, database);
    }

    /** Reads {@link #encode()}'s output. */
    public static CaptureFingerprint decode(String encoded) {
        String[] parts = encoded.split("\\|", -1);
        if (parts.length != 6) {
            throw new IllegalArgumentException("not a capture fingerprint: " + encoded);
        }
        return new CaptureFingerprint(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]);
    }
}
