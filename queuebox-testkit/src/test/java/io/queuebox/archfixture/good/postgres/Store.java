package io.queuebox.archfixture.good.postgres;

import io.queuebox.archfixture.good.jdbc.Identifiers;
import io.queuebox.archfixture.good.ports.Port;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;

public final class Store implements Port {
    private final Connection connection;

    public Store(Connection connection) {
        this.connection = connection;
    }

    @Override
    public List<String> names() {
        return List.of(Identifiers.quoted(String.valueOf(connection)));
    }

    @Override
    public Duration timeout() {
        return Duration.ofSeconds(1);
    }
}
