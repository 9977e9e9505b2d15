package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The held claim's own bookkeeping (deadline, timer, commit on the last outcome, lost connections) on a recording
 * connection: no database. What SQL Server does with the locks is for the Testcontainers suites.
 */
class HeldClaimTest {

    private static final String TABLE = "[test].[held_claim_" + UUID.randomUUID().toString().substring(0, 8) + "]";
    private static final UUID A = UUID.randomUUID();
    private static final UUID B = UUID.randomUUID();

    private final RecordingConnection connection = new RecordingConnection();

    @AfterEach
    void endClaims() {
        HeldClaim.abortAll(TABLE);
    }

    @Test
    void theLastOutcomeCommitsAndGivesTheConnectionBack() {
        HeldClaim claim = HeldClaim.start(TABLE, connection.openInTransaction(), List.of(A, B), Duration.ofMinutes(1));
        List<List<UUID>> written = new CopyOnWriteArrayList<>();

        assertThat(claim.resolve(List.of(A, UUID.randomUUID()), rows -> write(written, rows))).isEqualTo(1);
        assertThat(connection.calls).doesNotContain("commit", "close");
        assertThat(claim.resolve(List.of(A), rows -> write(written, rows))).as("A has its outcome already").isZero();
        assertThat(claim.resolve(List.of(B), rows -> write(written, rows))).isEqualTo(1);

        assertThat(written).containsExactly(List.of(A), List.of(B));
        assertThat(connection.calls).containsSubsequence("commit", "close").doesNotContain("rollback", "abort");
        assertThat(claim.ended()).isTrue();
        assertThat(HeldClaim.heldRows(TABLE)).isEmpty();
    }

    @Test
    void anOutcomeAfterTheDeadlineWritesNothingAndRollsBack() throws Exception {
        HeldClaim claim = HeldClaim.start(TABLE, connection.openInTransaction(), List.of(A), Duration.ofMillis(50));
        Thread.sleep(150);
        AtomicInteger writes = new AtomicInteger();

        assertThat(claim.resolve(List.of(A), rows -> writes.incrementAndGet())).isZero();
        assertThat(claim.renew(Duration.ofMinutes(1), writes::incrementAndGet)).isZero();

        assertThat(writes).hasValue(0);
        assertThat(connection.calls).doesNotContain("commit").contains("close");
        assertThat(claim.ended()).isTrue();
    }

    @Test
    void theTimerClosesTheConnectionOfAClaimNobodySpeaksFor() {
        HeldClaim claim = HeldClaim.start(TABLE, connection.openInTransaction(), List.of(A), Duration.ofMillis(100));
        assertThat(HeldClaim.heldRows(TABLE)).containsExactly(A);

        await().atMost(Duration.ofSeconds(5)).until(claim::ended);

        assertThat(connection.calls).contains("abort").doesNotContain("commit");
        assertThat(HeldClaim.heldRows(TABLE)).isEmpty();
    }

    @Test
    void anOutcomeAndARenewalRestartTheDeadline() throws Exception {
        HeldClaim claim = HeldClaim.start(TABLE, connection.openInTransaction(), List.of(A, B), Duration.ofMillis(600));
        Thread.sleep(400);
        assertThat(claim.resolve(List.of(A), rows -> rows.size())).isEqualTo(1);
        Thread.sleep(400); // past the first deadline, within the one the outcome restarted
        assertThat(claim.renew(Duration.ofMillis(600), () -> { })).isEqualTo(1);
        Thread.sleep(400);

        assertThat(claim.abandoned()).isFalse();
        assertThat(claim.resolve(List.of(B), rows -> rows.size())).isEqualTo(1);
        assertThat(connection.calls).contains("commit").doesNotContain("abort", "rollback");
    }

    @Test
    void aStatementThatFailsRollsBackAndCountsAsLostOnlyWhenTheConnectionOrTransactionIsGone() {
        HeldClaim lost = HeldClaim.start(TABLE, connection.openInTransaction(), List.of(A), Duration.ofMinutes(1));
        assertThat(lost.resolve(List.of(A), rows -> {
            throw new IllegalStateException(new SQLException("Connection reset", "08S01"));
        })).isZero();
        assertThat(lost.ended()).isTrue();

        RecordingConnection other = new RecordingConnection();
        HeldClaim failing = HeldClaim.start(TABLE, other.openInTransaction(), List.of(B), Duration.ofMinutes(1));
        assertThatThrownBy(() -> failing.resolve(List.of(B), rows -> {
            throw new IllegalStateException(new SQLException("Invalid column name", "S0001"));
        })).isInstanceOf(IllegalStateException.class);
        assertThat(failing.ended()).isTrue();
        assertThat(other.calls).contains("rollback").doesNotContain("commit");

        HeldClaim gone = HeldClaim.start(TABLE, new RecordingConnection().openInTransaction(), List.of(A),
                Duration.ofMinutes(1));
        assertThat(gone.renew(Duration.ofMinutes(1), () -> {
            throw new HeldClaim.TransactionGone();
        })).isZero();
    }

    @Test
    void lostMeansTheConnectionOrTheTransactionIsGone() {
        assertThat(HeldClaim.lost(new RuntimeException(new SQLException("reset", "08S01")))).isTrue();
        assertThat(HeldClaim.lost(new SQLException("deadlock victim", "40001"))).isTrue();
        assertThat(HeldClaim.lost(new HeldClaim.TransactionGone())).isTrue();
        assertThat(HeldClaim.lost(new SQLException("query timed out", "HY008"))).isFalse();
        assertThat(HeldClaim.lost(new IllegalStateException("no SQL state"))).isFalse();
    }

    @Test
    void theRowsAndDeadlinesOfLiveClaimsAreKnownByTable() {
        HeldClaim soon = HeldClaim.start(TABLE, connection.openInTransaction(), List.of(A), Duration.ofSeconds(20));
        HeldClaim.start(TABLE, new RecordingConnection().openInTransaction(), List.of(B), Duration.ofSeconds(40));

        assertThat(HeldClaim.heldRows(TABLE)).isEqualTo(Set.of(A, B));
        assertThat(HeldClaim.heldRows(TABLE + "_other")).isEmpty();
        assertThat(HeldClaim.soonestDeadline(TABLE)).hasValueSatisfying(d ->
                assertThat(d).isBetween(Duration.ofSeconds(18), Duration.ofSeconds(20)));

        soon.abort();
        assertThat(HeldClaim.heldRows(TABLE)).containsExactly(B);
    }

    private static int write(List<List<UUID>> written, List<UUID> rows) {
        written.add(rows);
        return rows.size();
    }

    /** A connection that records the transaction calls a held claim makes on it. */
    static final class RecordingConnection {
        final List<String> calls = new CopyOnWriteArrayList<>();
        private volatile boolean autoCommit = true;
        private volatile boolean closed;

        Handle openInTransaction() {
            Connection proxy = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                    new Class<?>[] {Connection.class}, (self, method, args) -> switch (method.getName()) {
                        case "getAutoCommit" -> autoCommit;
                        case "setAutoCommit" -> {
                            autoCommit = (Boolean) args[0];
                            yield null;
                        }
                        case "commit", "rollback" -> {
                            if (closed) {
                                throw new SQLException("The connection is closed.", "08S01");
                            }
                            calls.add(method.getName());
                            yield null;
                        }
                        case "close", "abort" -> {
                            calls.add(method.getName());
                            closed = true;
                            yield null;
                        }
                        case "isClosed" -> closed;
                        case "isReadOnly" -> false;
                        case "getTransactionIsolation" -> Connection.TRANSACTION_READ_COMMITTED;
                        case "hashCode" -> System.identityHashCode(self);
                        case "equals" -> self == args[0];
                        case "toString" -> "RecordingConnection";
                        default -> throw new UnsupportedOperationException(method.getName());
                    });
            DataSource dataSource = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                    new Class<?>[] {DataSource.class}, (self, method, args) -> {
                        if (method.getName().equals("getConnection")) {
                            return proxy;
                        }
                        throw new UnsupportedOperationException(method.getName());
                    });
            Handle handle = Jdbi.create(dataSource).open();
            handle.begin();
            return handle;
        }
    }
}
