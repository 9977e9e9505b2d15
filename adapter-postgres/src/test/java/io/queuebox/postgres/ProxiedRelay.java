package io.queuebox.postgres;

import io.queuebox.testkit.faults.TcpProxy;
import io.queuebox.testkit.services.TestServices;
import java.io.IOException;
import java.net.URI;
import org.postgresql.ds.PGSimpleDataSource;

/** A relay's connections to the test PostgreSQL through a {@link TcpProxy} the test can freeze or stall. */
final class ProxiedRelay {

    private ProxiedRelay() {
    }

    /** A proxy in front of the test server. */
    static TcpProxy proxy() throws IOException {
        URI server = server();
        return new TcpProxy(server.getHost(), server.getPort());
    }

    /** Connections through {@code proxy}, named {@code applicationName} in {@code pg_stat_activity}. */
    static PGSimpleDataSource through(TcpProxy proxy, String applicationName) {
        URI server = server();
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(TestServices.postgresUrl().replace(server.getHost() + ":" + server.getPort(),
                "127.0.0.1:" + proxy.port()));
        dataSource.setApplicationName(applicationName);
        return dataSource;
    }

    private static URI server() {
        return URI.create(TestServices.postgresUrl().substring("jdbc:".length()));
    }
}
