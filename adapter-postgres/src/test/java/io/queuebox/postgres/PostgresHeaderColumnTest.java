package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.postgres.PostgresOutboxStore.HeaderColumn;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The relay reads the headers column from jsonb's text. It must give what PostgreSQL's own {@code jsonb_each_text}
 * and {@code jsonb_typeof} give for the same value (how the claim read it before), for every JSON a row written by
 * hand may hold: this asks the real database for both.
 */
class PostgresHeaderColumnTest {

    private TestDatabase db;

    @BeforeEach
    void database() {
        db = TestDatabase.withFreshSchema("headercol");
    }

    @AfterEach
    void close() {
        db.close();
    }

    static List<String> values() {
        return List.of(
                "{}",
                "{\"traceparent\": \"00-1\"}",
                "{\"b\": \"2\", \"a\": \"1\", \"aa\": \"3\", \"B\": \"4\"}",
                "{\"quote\": \"say \\\"hi\\\"\", \"back\\\\slash\": \"c:\\\\dir\", \"nl\": \"a\\nb\\tc\\rd\\be\\ff\"}",
                "{\"ctl\": \"\\u0001\\u001f\", \"slash\": \"a\\/b\", \"unicode\": \"\\u00e9t\\u00e9 \\ud83d\\ude00 日本\"}",
                "{\"n\": 1, \"big\": 123456789012345678901234567890, \"exp\": 1e2, \"frac\": 1.50, \"neg\": -0, \"E\": 2.5E-3}",
                "{\"t\": true, \"f\": false}",
                "{\"nested\": {\"b\": 1, \"a\": [1, \"two\", {\"c\": null}]}, \"list\": [], \"obj\": {}}",
                "{\"s\": \"}]{[,\", \"arr\": [\"]\", \"}\", \"\\\"\"]}",
                "{\"dup\": \"first\", \"dup\": \"second\"}",
                "{\"a\": \"x\", \"nothing\": null}",
                "{\"\": \"blank name\"}",
                "[\"traceparent\", 1]",
                "\"just text\"",
                "42",
                "-1.5e3",
                "true",
                "null",
                "[" + "\"long\", ".repeat(60) + "\"é\"]");
    }

    @ParameterizedTest
    @MethodSource("values")
    void readsHeadersAsPostgresTakesThemApart(String json) throws Exception {
        try (Connection connection = db.dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement("SELECT h::text AS headers, jsonb_typeof(h) AS type,"
                     + " CASE WHEN jsonb_typeof(h) = 'object' THEN ARRAY(SELECT e.key FROM jsonb_each_text(h) e"
                     + " ORDER BY e.key COLLATE \"C\") END AS names,"
                     + " CASE WHEN jsonb_typeof(h) = 'object' THEN ARRAY(SELECT e.value FROM jsonb_each_text(h) e"
                     + " ORDER BY e.key COLLATE \"C\") END AS vals,"
                     + " left(h::text, 200) AS text200 FROM (SELECT ?::jsonb AS h) v")) {
            statement.setString(1, json);
            try (ResultSet rs = statement.executeQuery()) {
                assertThat(rs.next()).isTrue();
                HeaderColumn column = HeaderColumn.read(rs);
                String type = rs.getString("type");
                if (!"object".equals(type)) {
                    assertThat(column.problem()).startsWith("headers is a JSON " + type + ", not an object of strings: "
                            + rs.getString("text200") + ";");
                    return;
                }
                String[] names = strings(rs.getArray("names"));
                String[] values = strings(rs.getArray("vals"));
                int firstNull = Arrays.asList(values).indexOf(null);
                if (firstNull >= 0) {
                    assertThat(column.problem()).startsWith("header '" + names[firstNull] + "' is JSON null, not a string;");
                    return;
                }
                assertThat(column.problem()).isNull();
                assertThat(column.names()).containsExactly(names);
                assertThat(column.values()).containsExactly(values);
            }
        }
    }

    private static String[] strings(Array array) throws Exception {
        return (String[]) array.getArray();
    }
}
