package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.testkit.services.TestServices;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

/**
 * What {@link PromptNotificationReads} changes in pgjdbc, on real listening sessions: whether asking for notifications
 * waits on the socket when none has arrived. The untreated session waits about 1 ms a time (pgjdbc's check for a
 * pending message), which is what kept a call reading on under a steady stream; the treated one does not wait.
 */
class PromptNotificationReadsTest {

    private static final int LOOKS = 200;

    @Test
    void aTreatedSessionLooksForNotificationsWithoutWaitingOnTheSocket() throws Exception {
        try (Connection untreated = listening(); Connection treated = listening()) {
            assertThat(PromptNotificationReads.apply(treated)).isEmpty();
            assertThat(PromptNotificationReads.applied(treated)).isTrue();
            assertThat(PromptNotificationReads.applied(untreated)).isFalse();

            // A lower bound, not a speed: each untreated look blocks on a 1 ms socket timeout.
            assertThat(nanosFor(LOOKS, untreated) / 1_000_000).as("ms for %d looks, untreated", LOOKS)
                    .isGreaterThanOrEqualTo(150);
            // Far below one wait per look: no look waited on the socket.
            assertThat(nanosFor(LOOKS, treated) / 1_000_000).as("ms for %d looks, treated", LOOKS)
                    .isLessThan(100);
        }
    }

    @Test
    void aConnectionThatIsNotPgjdbcsIsLeftAsItIsAndTheReasonSaid() throws SQLException {
        try (Connection connection = DriverManager.getConnection(TestServices.postgresUrl())) {
            Connection notPgjdbc = (Connection) java.lang.reflect.Proxy.newProxyInstance(
                    Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                        if (method.getName().equals("unwrap")) {
                            throw new SQLException("no pgjdbc inside");
                        }
                        return method.invoke(connection, args);
                    });

            assertThat(PromptNotificationReads.apply(notPgjdbc)).hasValue("SQLException: no pgjdbc inside");
            assertThat(PromptNotificationReads.applied(notPgjdbc)).isFalse();
        }
    }

    private static Connection listening() throws SQLException {
        Connection connection = DriverManager.getConnection(TestServices.postgresUrl());
        try (Statement statement = connection.createStatement()) {
            statement.execute("LISTEN queuebox_prompt_reads_test");
        }
        return connection;
    }

    /** Asks {@code looks} times for notifications that have arrived; none has. */
    private static long nanosFor(int looks, Connection connection) throws SQLException {
        PGConnection pg = connection.unwrap(PGConnection.class);
        long start = System.nanoTime();
        for (int i = 0; i < looks; i++) {
            assertThat(pg.getNotifications()).isEmpty();
        }
        return System.nanoTime() - start;
    }
}
