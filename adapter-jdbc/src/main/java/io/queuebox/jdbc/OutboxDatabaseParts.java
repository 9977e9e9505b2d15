package io.queuebox.jdbc;

import io.queuebox.ports.CaptureLock;
import io.queuebox.ports.CaptureSourceInspector;
import io.queuebox.ports.CaptureStateStore;
import io.queuebox.ports.InsertNotifications;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.OutboxWriter;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
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
                                  Runnable schemaCreation,
                                  Function<DedicatedConnectionLock.ConnectionFactory, Optional<InsertNotifications>> notifications,
                                  Function<Boolean, Boolean> notificationSwitch) implements OutboxDatabase {

    /** Parts of a database that cannot notify inserts. */
    public OutboxDatabaseParts(OutboxStore store, OutboxWriter<Connection> writer, CaptureStateStore captureStateStore,
                               CaptureLock captureLock, CaptureSourceInspector captureSourceInspector,
                               Supplier<List<String>> deliveryRights, Supplier<List<String>> migrationRights,
                               Runnable schemaCreation) {
        this(store, writer, captureStateStore, captureLock, captureSourceInspector, deliveryRights, migrationRights,
                schemaCreation, connections -> Optional.empty(), enabled -> false);
    }

    public OutboxDatabaseParts {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(writer, "writer");
        Objects.requireNonNull(captureStateStore, "captureStateStore");
        Objects.requireNonNull(captureLock, "captureLock");
        Objects.requireNonNull(captureSourceInspector, "captureSourceInspector");
        Objects.requireNonNull(deliveryRights, "deliveryRights");
        Objects.requireNonNull(migrationRights, "migrationRights");
        Objects.requireNonNull(schemaCreation, "schemaCreation");
        Objects.requireNonNull(notifications, "notifications");
        Objects.requireNonNull(notificationSwitch, "notificationSwitch");
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
    public Optional<InsertNotifications> insertNotifications(DedicatedConnectionLock.ConnectionFactory connections) {
        return notifications.apply(connections);
    }

    @Override
    public boolean insertNotifications(boolean enabled) {
        return notificationSwitch.apply(enabled);
    }

    @Override
    public void createSchema() {
        schemaCreation.run();
    }
}
