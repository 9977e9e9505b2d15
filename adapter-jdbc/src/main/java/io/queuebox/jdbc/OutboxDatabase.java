package io.queuebox.jdbc;

import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.InsertNotifications;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import java.sql.Connection;
import java.util.List;
import java.util.Optional;

/**
 * One outbox table on one data source, as a {@link DatabaseProvider} opened it: every adapter piece the
 * bootstrap wires, already bound to the table and the data source. Opening runs no SQL; each piece borrows
 * connections from the data source when used.
 */
public interface OutboxDatabase {

    /** The store delivery claims from. */
    OutboxStore store();

    /** The writer that joins the caller's JDBC transaction. */
    OutboxWriter<Connection> writer();

    /** The {@code queuebox_capture_state} table next to the outbox. */
    CaptureStateStore captureStateStore();

    /**
     * The capture owner's session lock; each acquisition keeps one connection of the data source for as long
     * as the lock is held.
     */
    CaptureLock captureLock();

    /** What the database says about capture (slot and publication, or CDC and the Agent). */
    CaptureSourceInspector captureSourceInspector();

    /**
     * The rights the connecting account lacks to deliver from the existing outbox table, each a sentence that
     * names the account, the right and the statement that grants it. Empty when nothing is missing, when the
     * table does not exist yet, or when the database cannot tell.
     */
    List<String> missingDeliveryRights();

    /** The rights the connecting account lacks to create or upgrade the schema, as {@link #missingDeliveryRights}. */
    List<String> missingMigrationRights();

    /**
     * The database telling that rows were inserted into the outbox table, on sessions opened by
     * {@code connections} (dedicated connections, never from the data source this database was opened on, whose
     * pool delivery uses). Empty when the database cannot notify inserts ({@link DatabaseProvider#notifiesInserts()}
     * is false); that is the default.
     */
    default Optional<InsertNotifications> insertNotifications(DedicatedConnectionLock.ConnectionFactory connections) {
        return Optional.empty();
    }

    /**
     * Makes inserts into the outbox table notify ({@code true}) or stop notifying, where the database can
     * ({@link DatabaseProvider#notifiesInserts()}): notifying costs the writers' commits, so the schema scripts
     * leave it off. Changes nothing when it is so already.
     *
     * @return whether anything changed; the default changes nothing and returns false
     * @throws IllegalStateException when the schema lacks what it needs (run the shipped scripts first)
     */
    default boolean insertNotifications(boolean enabled) {
        return false;
    }

    /** Creates the schema objects with the shipped scripts, without Flyway (tests, demos). */
    void createSchema();
}
