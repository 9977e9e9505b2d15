package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An update run through {@link IndexPlans#updateCount()} gives its JDBC statement back as Jdbi's own update count does
 * (ResultProducers.returningUpdateCount closes the statement context): not only when its handle closes. On a
 * long-lived handle (a held claim's) every outcome would otherwise keep a PreparedStatement open until the claim ends.
 */
class IndexPlansUpdateCountClosesStatementTest {

    private TestDatabase db;

    @AfterEach
    void drop() {
        db.close();
    }

    @Test
    void theStatementIsClosedOnceTheCountIsRead() throws Exception {
        db = TestDatabase.withFreshSchema("ipclose");
        db.execute("CREATE SCHEMA " + db.schema);
        db.execute("CREATE TABLE " + db.schema + ".t (id int)");
        List<PreparedStatement> executed = new ArrayList<>();
        StatementCustomizer capture = new StatementCustomizer() {
            @Override
            public void beforeExecution(PreparedStatement statement, StatementContext context) {
                executed.add(statement);
            }
        };
        try (Handle handle = Jdbi.create(db.dataSource).open()) {
            int plain = handle.createUpdate("UPDATE " + db.schema + ".t SET id = 1").addCustomizer(capture).execute();
            int under = handle.createUpdate(IndexPlans.under("UPDATE " + db.schema + ".t SET id = 1"))
                    .addCustomizer(capture).execute(IndexPlans.updateCount());
            assertThat(plain).isZero();
            assertThat(under).isZero();
            assertThat(executed.get(0).isClosed()).as("Jdbi's own update count closes its statement").isTrue();
            assertThat(executed.get(1).isClosed()).as("IndexPlans.updateCount() closes its statement").isTrue();
        }
    }
}
