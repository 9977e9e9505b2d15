package io.queuebox.jdbc;

import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * An {@link OutboxDatabase} from the pieces an adapter built: what {@link DatabaseProvider#open} returns, so
 * that each adapter only says how to build its pieces. The rights checks and schema creation run SQL, so
 * they are given as functions and run when called.
 */
public record OutboxDatabaseParts(OutboxStore store, OutboxWriter<Connection> writer,
                                  CaptureStateStore captureStateStore, CaptureLock captureLock,
                                  CaptureSourceInspector captureSourceInspector,
                                  Supplier<List<String>> deliveryRights, Supplier<List<String>> migrationRights,
                                  Runnable schemaCreation) implements OutboxDatabase {

    public OutboxDatabaseParts {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(writer, "writer");
        Objects.requireNonNull(captureStateStore, "captureStateStore");
        Objects.requireNonNull(captureLock, "captureLock");
        Objects.requireNonNull(captureSourceInspector, "captureSourceInspector");
        Objects.requireNonNull(deliveryRights, "deliveryRights");
        Objects.requireNonNull(migrationRights, "migrationRights");
        Objects.requireNonNull(schemaCreation, "schemaCreation");
    }

    @Override
    public List<String> missingDeliveryRights() {
        return deliveryRights.get();
    }

    @Override
    public List<String> missingMigrationRights() {
        return migrationRights.get();
    }

    @Override
    public void createSchema() {
        schemaCreation.run();
    }
}
