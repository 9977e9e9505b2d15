package io.queuebox.archfixture.bad.ports;

import java.sql.Connection;

public interface PortUsingJdbc {
    void write(Connection connection);
}
