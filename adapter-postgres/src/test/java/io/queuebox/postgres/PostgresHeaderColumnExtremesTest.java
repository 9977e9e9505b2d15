package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.postgres.PostgresOutboxStore.HeaderColumn;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import org.junit.jupiter.api.Test;

/**
 * Headers the writer never writes but a row written by hand may hold, as jsonb prints them: nested 5,000 deep (the
 * reader counts brackets, it does not recurse), 200,000 names, a 15 MB string of escapes with 1,000 numbers beside
 * it. Each reads without failing. (Review of cf37699.)
 */
class PostgresHeaderColumnExtremesTest {

    private static String roundTrip(TestDatabase db, String json) throws Exception {
        try (Connection c = db.dataSource.getConnection(); PreparedStatement s = c.prepareStatement("SELECT ?::jsonb::text")) {
            s.setString(1, json);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    @Test
    void headersFarBeyondWhatTheWriterWritesReadWithoutFailing() throws Exception {
        try (TestDatabase db = TestDatabase.withFreshSchema("extreme")) {
            int depth = 5000;
            String deep = roundTrip(db, "{\"a\": " + "[".repeat(depth) + "\"x\"" + "]".repeat(depth) + ", \"b\": \"c\"}");
            HeaderColumn column = HeaderColumn.of(deep);
            assertThat(column.values()[1]).isEqualTo("c");

            StringBuilder many = new StringBuilder("{");
            for (int i = 0; i < 200_000; i++) {
                many.append(i > 0 ? "," : "").append("\"k").append(i).append("\": \"v\\\"").append(i).append('"');
            }
            String wide = roundTrip(db, many.append('}').toString());
            column = HeaderColumn.of(wide);
            assertThat(column.names()).hasSize(200_000);

            String big = roundTrip(db, "{\"big\": \"" + "\\\"x".repeat(5_000_000) + "\", \"n\": [" + "1e300, ".repeat(1000) + "1]}");
            column = HeaderColumn.of(big);
            assertThat(column.problem()).isNull();
        }
    }
}
