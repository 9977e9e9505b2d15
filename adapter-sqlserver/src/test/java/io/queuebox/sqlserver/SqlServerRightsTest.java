package io.queuebox.sqlserver;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.jdbc.OutboxDatabase;
import io.queuebox.jdbc.OutboxTable;
import java.util.OptionalInt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Testcontainers;

/** What the jar checks before run and migrate, against real SQL Server. Skipped without Docker. */
@Testcontainers(disabledWithoutDocker = true)
class SqlServerRightsTest {

    private static TestDatabase db;

    @BeforeAll
    static void database() {
        db = TestDatabase.create("rights");
    }

    @AfterAll
    static void drop() {
        db.close();
    }

    @Test
    void theAdministratorLacksNothingAndAMissingTableIsNoDeliveryProblem() {
        OutboxDatabase database = new SqlServerDatabaseProvider().open(db.dataSource,
                new OutboxTable("dbo", "rights_outbox", false, OptionalInt.empty()));

        assertThat(database.missingDeliveryRights()).as("the table does not exist yet").isEmpty();
        assertThat(database.missingMigrationRights()).isEmpty();
        database.createSchema();
        assertThat(database.missingDeliveryRights()).isEmpty();
        assertThat(database.store().stats().pending()).isZero();
    }

    @Test
    void aUserWithoutGrantsIsToldEachMissingRightWithItsGrant() {
        OutboxTable table = new OutboxTable("dbo", "rights_outbox", false, OptionalInt.empty());
        new SqlServerDatabaseProvider().open(db.dataSource, table).createSchema();
        db.execute("CREATE LOGIN qb_rights_user WITH PASSWORD = 'Rights-Pass-1234', CHECK_POLICY = OFF");
        db.execute("CREATE USER qb_rights_user FOR LOGIN qb_rights_user");
        db.execute("GRANT SELECT ON OBJECT::[dbo].[rights_outbox] TO qb_rights_user");
        com.microsoft.sqlserver.jdbc.SQLServerDataSource limited = new com.microsoft.sqlserver.jdbc.SQLServerDataSource();
        limited.setURL(db.url.replaceAll(";user=[^;]*|;password=[^;]*", "") + ";user=qb_rights_user;password=Rights-Pass-1234");
        try {
            assertThat(new SqlServerDatabaseProvider().open(limited, table).missingDeliveryRights())
                    .containsExactly(
                            SqlServerRights.onTable("qb_rights_user", "UPDATE", "[dbo].[rights_outbox]"),
                            SqlServerRights.onTable("qb_rights_user", "DELETE", "[dbo].[rights_outbox]"));
        } finally {
            db.execute("DROP USER qb_rights_user");
            db.execute("USE master; DROP LOGIN qb_rights_user");
        }
    }
}
