package io.queuebox.bootstrap.logs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.ConnectException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.PSQLState;

class ShortCauseTest {

    private static final String CLAIM_SQL = "WITH RECURSIVE window_end AS MATERIALIZED (SELECT max(w.seq) AS seq,"
            + " count(*) AS pending FROM (SELECT p.seq FROM \"public\".\"queuebox_outbox\" p WHERE ...) w) UPDATE ...";

    /** How Jdbi wraps the driver's exception: its message repeats the driver's and appends the statement. */
    private static RuntimeException jdbi(SQLException driver) {
        return new RuntimeException(driver + " [statement:\"" + CLAIM_SQL + "\", arguments:{positional:{0:100}}]", driver);
    }

    @Test
    void aStatementThatFailedIsItsSqlStateAndTheDriversFirstLineWithoutTheStatement() {
        SQLException terminated = new SQLException("FATAL: terminating connection due to administrator command", "57P01");

        assertThat(ShortCause.of(jdbi(terminated))).isEqualTo("57P01 terminating connection due to administrator command");
        assertThat(ShortCause.isConnectionFault(jdbi(terminated))).isTrue();
    }

    @Test
    void aPoolTimeoutIsTheDriversReasonWithThePoolsState() {
        PSQLException refused = new PSQLException("Connection to 127.0.0.1:5432 refused. Check that the hostname and port"
                + " are correct and that the postmaster is accepting TCP/IP connections.",
                PSQLState.CONNECTION_UNABLE_TO_CONNECT, new ConnectException("Connection refused"));
        SQLTransientConnectionException timeout = new SQLTransientConnectionException("queuebox-delivery - Connection is"
                + " not available, request timed out after 5000ms (total=0, active=0, idle=0, waiting=0)", "08001", refused);

        assertThat(ShortCause.of(new RuntimeException(timeout))).startsWith("08001 Connection to 127.0.0.1:5432 refused.")
                .hasSizeLessThanOrEqualTo(ShortCause.LONGEST);
        assertThat(ShortCause.isConnectionFault(timeout)).isTrue();
    }

    @Test
    void aFaultOfTheDataIsNotAnOutage() {
        SQLException missing = new SQLException("ERROR: relation \"public.queuebox_outbox\" does not exist\n  Position: 93",
                "42P01");

        assertThat(ShortCause.of(jdbi(missing))).isEqualTo("42P01 relation \"public.queuebox_outbox\" does not exist");
        assertThat(ShortCause.isConnectionFault(jdbi(missing))).isFalse();
    }

    @Test
    void anythingElseIsItsTypeAndFirstLineMaskedAndClipped() {
        IOException broker = new IOException("cannot reach amqp://guest:secret@rabbit:5672/\nsecond line " + "x".repeat(300));

        assertThat(ShortCause.of(broker)).isEqualTo("IOException: cannot reach amqp://guest:******@rabbit:5672/");
        assertThat(ShortCause.of(new IllegalStateException("y".repeat(500)))).hasSize(ShortCause.LONGEST);
        assertThat(ShortCause.of(new RuntimeException(new ConnectException("Connection refused"))))
                .isEqualTo("ConnectException: Connection refused");
    }
}
