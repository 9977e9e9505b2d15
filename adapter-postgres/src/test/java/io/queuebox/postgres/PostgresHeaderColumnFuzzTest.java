package io.queuebox.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.queuebox.postgres.PostgresOutboxStore.HeaderColumn;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * 20,000 random JSON values (escapes, control and non-BMP characters, numbers in every form, nesting, all JSON
 * whitespace) read both ways: as the claim read them before cf37699 (jsonb_typeof, jsonb_each_text in the database's
 * collation, left(text, 200)) and as {@link HeaderColumn} reads jsonb's text now. Compared as maps. (Review of cf37699.)
 */
class PostgresHeaderColumnFuzzTest {

    static final String OLD = "SELECT h::text AS headers, jsonb_typeof(h) AS type,"
            + " CASE WHEN jsonb_typeof(h) = 'object' THEN ARRAY(SELECT e.key FROM jsonb_each_text(h) e ORDER BY e.key) END AS names,"
            + " CASE WHEN jsonb_typeof(h) = 'object' THEN ARRAY(SELECT e.value FROM jsonb_each_text(h) e ORDER BY e.key) END AS vals,"
            + " CASE WHEN jsonb_typeof(h) <> 'object' THEN left(h::text, 200) END AS text200 FROM (SELECT ?::jsonb AS h) v";

    static final String[] ATOMS = {"a", "B", "\\\"", "\\\\", "\\/", "\\n", "\\u0001", "\\u001f", "\\u007f", "\\u00e9", "é",
            "\\ud83d\\ude00", "😀", "\uFF21", "\uE000", "]", "}", "[", "{", ",", ":", " ", "\\t", "\u2028", "\u00a0", "\\u2028",
            "ǅ", "ß", "\\b", "\\f", "\\r", "\u0085", "\u3000"};

    final Random random = new Random(42);

    String str() {
        StringBuilder b = new StringBuilder("\"");
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
            b.append(ATOMS[random.nextInt(ATOMS.length)]);
        }
        return b.append('"').toString();
    }

    String value(int depth) {
        int k = random.nextInt(depth > 3 ? 6 : 8);
        String[] ws = {"", " ", "\n", "\t", "\r\n  "};
        String w = ws[random.nextInt(ws.length)];
        return switch (k) {
            case 0, 1 -> str();
            case 2 -> List.of("1", "-0", "1e2", "1E-3", "123456789012345678901234567890.5000", "0.0", "-1.5e+3", "1e40").get(random.nextInt(8));
            case 3 -> random.nextBoolean() ? "true" : "false";
            case 4 -> "null";
            case 5 -> str();
            case 6 -> {
                List<String> items = new ArrayList<>();
                for (int i = random.nextInt(3); i > 0; i--) items.add(value(depth + 1));
                yield "[" + w + String.join(w + "," + w, items) + w + "]";
            }
            default -> {
                List<String> items = new ArrayList<>();
                for (int i = random.nextInt(4); i > 0; i--) items.add(str() + w + ":" + w + value(depth + 1));
                yield "{" + w + String.join("," + w, items) + w + "}";
            }
        };
    }

    @Test
    void randomJsonReadsAsTheDatabaseTakesItApart() throws Exception {
        try (TestDatabase db = TestDatabase.withFreshSchema("fuzz");
             Connection connection = db.dataSource.getConnection();
             PreparedStatement statement = connection.prepareStatement(OLD)) {
            List<String> differences = new ArrayList<>();
            for (int i = 0; i < 20000; i++) {
                String json = i % 3 == 0 ? value(0) : value(0) ;
                if (i % 2 == 0) {
                    StringBuilder b = new StringBuilder("{");
                    for (int j = random.nextInt(5); j > 0; j--) {
                        b.append(str()).append(": ").append(value(1)).append(j > 1 ? ", " : "");
                    }
                    json = b.append("}").toString();
                }
                statement.setString(1, json);
                try (ResultSet rs = statement.executeQuery()) {
                    rs.next();
                    String expected;
                    String type = rs.getString("type");
                    if (!"object".equals(type)) {
                        expected = "headers is a JSON " + type + ", not an object of strings: " + rs.getString("text200");
                    } else {
                        String[] names = (String[]) rs.getArray("names").getArray();
                        String[] values = (String[]) rs.getArray("vals").getArray();
                        int firstNull = Arrays.asList(values).indexOf(null);
                        java.util.Map<String, String> m = new java.util.TreeMap<>();
                        for (int j = 0; j < names.length; j++) m.put(names[j], values[j]);
                        expected = firstNull >= 0 ? "NULL" : m.toString();
                    }
                    String actual;
                    try {
                        HeaderColumn c = HeaderColumn.of(rs.getString("headers"));
                        java.util.Map<String, String> m = new java.util.TreeMap<>();
                        if (c.problem() == null) for (int j = 0; j < c.names().length; j++) m.put(c.names()[j], c.values()[j]);
                        actual = c.problem() != null ? (c.problem().contains("is JSON null") ? "NULL" : c.problem().substring(0, c.problem().indexOf("; write")))
                                : m.toString();
                    } catch (RuntimeException e) {
                        actual = "THROWS " + e;
                    }
                    if (!expected.equals(actual)) {
                        differences.add(json + "\n   jsonb: " + rs.getString("headers") + "\n   old: " + expected + "\n   new: " + actual);
                    }
                }
            }
            assertThat(differences).as("differences").hasSizeLessThan(1);
        }
    }
}
