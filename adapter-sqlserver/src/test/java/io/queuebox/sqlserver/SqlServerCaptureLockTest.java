package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Testcontainers;

import static org.awaitility.Awaitility.await;

/** sp_getapplock with a Session owner on a dedicated connection, against real SQL Server. Skipped without Docker. */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerCaptureLockTest {

    private static TestDatabase db;

    @BeforeAll
    static void database() {
        db = TestDatabase.create("lock");
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void aSecondSessionCannotTakeAHeldIdentityAndCanOnceItIsClosed() {
        CaptureLock lock = SqlServerOutbox.captureLock(db.dataSource);
        CaptureIdentity identity = CaptureIdentity.random();

        Optional<CaptureLock.Held> first = lock.tryAcquire(identity);
        assertThat(first).isPresent();
        assertThat(first.get().isHeld()).isTrue();
        assertThat(lock.tryAcquire(identity)).isEmpty();
        assertThat(lock.tryAcquire(CaptureIdentity.random())).hasValueSatisfying(CaptureLock.Held::close);

        first.get().close();
        assertThat(first.get().isHeld()).isFalse();
        Optional<CaptureLock.Held> second = lock.tryAcquire(identity);
        assertThat(second).isPresent();
        second.get().close();
    }

    @Test
    void aKilledSessionLosesTheLock() throws SQLException {
        CaptureLock lock = SqlServerOutbox.captureLock(db.dataSource);
        CaptureIdentity identity = CaptureIdentity.random();
        CaptureLock.Held held = lock.tryAcquire(identity).orElseThrow();
        try (Connection admin = db.dataSource.getConnection(); Statement statement = admin.createStatement()) {
            int session;
            try (ResultSet rs = statement.executeQuery("SELECT request_session_id FROM sys.dm_tran_locks"
                    + " WHERE resource_type = 'APPLICATION' AND request_owner_type = 'SESSION'"
                    + " AND resource_database_id = DB_ID() AND resource_description LIKE '%"
                    + SqlServerCaptureLock.resource(identity).substring(0, 20) + "%'")) {
                // The description holds a hash and a prefix of the name; one test lock exists at this point.
                rs.next();
                session = rs.getInt(1);
            }
            statement.execute("KILL " + session);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> !held.isHeld());
        held.close();
        Optional<CaptureLock.Held> again = lock.tryAcquire(identity);
        assertThat(again).isPresent();
        again.get().close();
    }

    @Test
    void aLockFromAJdbcUrlBehavesTheSame() {
        CaptureLock lock = SqlServerOutbox.captureLock(db.url, new Properties());
        CaptureIdentity identity = CaptureIdentity.random();
        try (CaptureLock.Held held = lock.tryAcquire(identity).orElseThrow()) {
            assertThat(held.isHeld()).isTrue();
            assertThat(SqlServerOutbox.captureLock(db.dataSource).tryAcquire(identity)).isEmpty();
        }
    }
}
