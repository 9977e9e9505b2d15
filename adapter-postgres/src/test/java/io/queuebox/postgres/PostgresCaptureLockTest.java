package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureLock;
import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class PostgresCaptureLockTest {

    private final PGSimpleDataSource dataSource = dataSource("queuebox-lock-test");
    private final CaptureLock lock = PostgresOutbox.captureLock(dataSource);
    private final CaptureLock otherProcess = PostgresOutbox.captureLock(dataSource("queuebox-other-process"));

    @Test
    void aSecondSessionCannotTakeAHeldIdentityAndCanOnceItIsClosed() {
        CaptureIdentity identity = CaptureIdentity.random();
        Optional<CaptureLock.Held> first = lock.tryAcquire(identity);
        assertThat(first).isPresent();
        assertThat(first.get().isHeld()).isTrue();

        assertThat(otherProcess.tryAcquire(identity)).as("the identity already has an owner").isEmpty();
        assertThat(otherProcess.tryAcquire(CaptureIdentity.random())).as("another identity is free")
                .hasValueSatisfying(CaptureLock.Held::close);

        first.get().close();
        assertThat(first.get().isHeld()).isFalse();
        Optional<CaptureLock.Held> second = otherProcess.tryAcquire(identity);
        assertThat(second).isPresent();
        second.get().close();
    }

    @Test
    void aTerminatedBackendLosesTheLock() throws SQLException {
        CaptureIdentity identity = CaptureIdentity.random();
        CaptureLock.Held held = lock.tryAcquire(identity).orElseThrow();
        try (Connection admin = dataSource.getConnection();
             PreparedStatement kill = admin.prepareStatement("SELECT pg_terminate_backend(pid) FROM pg_locks"
                     + " WHERE locktype = 'advisory' AND classid::bigint = ? AND objid::bigint = ?")) {
            long key = PostgresCaptureLock.key(identity);
            kill.setLong(1, key >>> 32);
            kill.setLong(2, key & 0xFFFFFFFFL);
            try (ResultSet rs = kill.executeQuery()) {
                assertThat(rs.next()).as("the lock is listed in pg_locks").isTrue();
                assertThat(rs.getBoolean(1)).isTrue();
            }
        }

        assertThat(held.isHeld()).as("a lost connection is lost ownership").isFalse();
        held.close();
        Optional<CaptureLock.Held> taken = await().atMost(Duration.ofSeconds(10))
                .until(() -> otherProcess.tryAcquire(identity), Optional::isPresent);
        taken.get().close();
    }

    @Test
    void aLockFromAJdbcUrlBehavesTheSame() {
        CaptureLock fromUrl = PostgresOutbox.captureLock(TestServices.postgresUrl(), new Properties());
        CaptureIdentity identity = CaptureIdentity.random();
        try (CaptureLock.Held held = fromUrl.tryAcquire(identity).orElseThrow()) {
            assertThat(held.isHeld()).isTrue();
            assertThat(lock.tryAcquire(identity)).isEmpty();
        }
        lock.tryAcquire(identity).orElseThrow().close();
    }

    @Test
    void theKeyIsStableAndDiffersBetweenIdentities() {
        assertThat(PostgresCaptureLock.key(new CaptureIdentity("relay-1")))
                .isEqualTo(PostgresCaptureLock.key(new CaptureIdentity("relay-1")))
                .isNotEqualTo(PostgresCaptureLock.key(new CaptureIdentity("relay-2")));
    }

    private static PGSimpleDataSource dataSource(String applicationName) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(TestServices.postgresUrl());
        dataSource.setApplicationName(applicationName);
        return dataSource;
    }
}
