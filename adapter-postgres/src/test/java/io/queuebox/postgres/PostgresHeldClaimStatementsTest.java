package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.ports.ClaimBatch;
import io.queuebox.ports.ClaimRequest;
import io.queuebox.ports.Ordering;
import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkingPolicy;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a held claim sends. An idle relay claims once per wake interval and finds nothing: that must stay one statement,
 * as with leased claims, even though a held claim also sets the timeouts of its transaction.
 */
class PostgresHeldClaimStatementsTest {

    private static final Set<String> EXECUTING = Set.of("execute", "executeQuery", "executeUpdate", "executeBatch",
            "executeLargeUpdate");

    private TestDatabase db;
    private PostgresOutboxSettings settings;
    private final AtomicInteger statements = new AtomicInteger();
    private OutboxStore store;

    @BeforeEach
    void schema() {
        db = TestDatabase.withFreshSchema("heldstmts");
        settings = db.settings().holdRowLocks(true).build();
        PostgresOutbox.createSchema(db.dataSource, settings);
        store = PostgresOutbox.store(counting(db.dataSource), settings);
    }

    @AfterEach
    void drop() {
        db.endHeldClaims();
        db.close();
    }

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void anEmptyHeldClaimIsOneStatement(Ordering ordering) {
        statements.set(0);
        assertThat(store.claim(request(ordering)).isEmpty()).isTrue();
        assertThat(statements.get()).as("statements of an empty claim").isEqualTo(1);
    }

    @ParameterizedTest
    @EnumSource(Ordering.class)
    void aHeldClaimOfRowsSetsItsTimeoutsWithoutAStatementOfItsOwn(Ordering ordering) {
        db.insertRow(settings, "a", "OrderPlaced", "{}");
        db.insertRow(settings, "b", "OrderPlaced", "{}");
        statements.set(0);
        ClaimBatch batch = store.claim(request(ordering));
        assertThat(batch.deliveries()).hasSize(2);
        // Unordered: lock and read the rows in one statement, as the pure-SQL floor does; ordered: choose, then lock.
        assertThat(statements.get()).as("statements of a claim of two rows").isEqualTo(ordering == Ordering.NONE ? 1 : 2);
        store.release(batch.lease(), batch.deliveries().stream().map(d -> d.eventId()).toList());
    }

    /**
     * After a full batch (a backlog, which other relays may be claiming too) an ordered claim also takes and ends the
     * turn to choose among processes (PostgresHeldChoiceTurnTest): one statement more, since the statement that locks
     * the chosen rows ends the turn.
     */
    @Test
    void anOrderedClaimAfterAFullBatchTakesTheTurnAmongProcesses() {
        for (int i = 0; i < 12; i++) {
            db.insertRow(settings, "agg-" + i, "OrderPlaced", "{}");
        }
        ClaimBatch full = store.claim(request(Ordering.PER_AGGREGATE));
        assertThat(full.deliveries()).hasSize(10);
        statements.set(0);
        ClaimBatch next = store.claim(request(Ordering.PER_AGGREGATE));
        assertThat(next.deliveries()).hasSize(2);
        assertThat(statements.get()).as("statements of a claim after a full one: turn, choose, lock and end of turn").isEqualTo(3);
        statements.set(0);
        assertThat(store.claim(request(Ordering.PER_AGGREGATE)).isEmpty()).isTrue();
        assertThat(statements.get()).as("statements of an empty claim after a partial one").isEqualTo(1);
        store.release(full.lease(), full.deliveries().stream().map(d -> d.eventId()).toList());
        store.release(next.lease(), next.deliveries().stream().map(d -> d.eventId()).toList());
    }

    private static ClaimRequest request(Ordering ordering) {
        return new ClaimRequest("relay", 10, Duration.ofSeconds(30), ordering, ParkingPolicy.HOLD_AGGREGATE);
    }

    private DataSource counting(DataSource target) {
        return proxy(DataSource.class, target, (method, result) -> method.equals("getConnection")
                ? proxy(Connection.class, result, (m, r) -> r instanceof Statement
                        ? proxy(statementType(r), r, (sm, sr) -> sr) : r)
                : result);
    }

    private static Class<?> statementType(Object statement) {
        if (statement instanceof java.sql.CallableStatement) {
            return java.sql.CallableStatement.class;
        }
        return statement instanceof java.sql.PreparedStatement ? java.sql.PreparedStatement.class : Statement.class;
    }

    private interface Wrap {
        Object apply(String method, Object result);
    }

    @SuppressWarnings("unchecked")
    private <T> T proxy(Class<?> type, Object target, Wrap wrap) {
        InvocationHandler handler = (self, method, args) -> {
            if (EXECUTING.contains(method.getName())) {
                statements.incrementAndGet();
            }
            try {
                return wrap.apply(method.getName(), method.invoke(target, args));
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (T) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {type}, handler);
    }
}
