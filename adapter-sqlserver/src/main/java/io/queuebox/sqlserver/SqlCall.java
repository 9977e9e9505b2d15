package io.queuebox.sqlserver;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One statement ready to run: its SQL for this outbox and its named parameters. Values are Strings
 * (uniqueidentifiers travel as text), Integers, Longs or Booleans; a null value is bound as NULL text.
 */
record SqlCall(SqlServerStatements statement, String sql, Map<String, Object> parameters) {

    SqlCall {
        parameters = Collections.unmodifiableMap(new LinkedHashMap<>(parameters));
    }
}
