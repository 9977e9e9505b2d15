package io.queuebox.reliability;

import io.queuebox.kafka.testing.InProcessKafka;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The services every scenario shares: the local PostgreSQL and RabbitMQ, and one in-process Kafka broker
 * (with topic auto-creation off, so a missing topic stays missing) that the outage scenario stops.
 */
final class Bed implements AutoCloseable {

    static final String PG_HOST = "127.0.0.1";
    static final int PG_PORT = 5432;
    static final String RABBIT_HOST = "127.0.0.1";
    static final int RABBIT_PORT = 5672;

    final Path jar;
    final Path workDir;
    private InProcessKafka kafka;

    Bed(Path jar, Path workDir) throws IOException {
        this.jar = jar;
        this.workDir = Files.createDirectories(workDir);
    }

    String rabbitUri(int port) {
        return "amqp://guest:guest@" + RABBIT_HOST + ":" + port + "/%2F";
    }

    String jdbcUrl(String database, int port) {
        return "jdbc:postgresql://" + PG_HOST + ":" + port + "/" + database + "?user=postgres";
    }

    synchronized InProcessKafka kafka() {
        if (kafka == null) {
            kafka = InProcessKafka.startDedicated(Map.of("auto.create.topics.enable", "false"));
        }
        return kafka;
    }

    /** A fresh database for one scenario, with the outbox created by the jar's own {@code migrate}. */
    String freshDatabase(String name) throws Exception {
        String database = "qb_rel_" + name.replace('-', '_');
        try (Connection admin = DriverManager.getConnection(jdbcUrl("postgres", PG_PORT));
             Statement statement = admin.createStatement()) {
            statement.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "' AND NOT active");
            statement.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
            statement.execute("CREATE DATABASE " + database);
        }
        Map<String, String> config = new HashMap<>();
        config.put("database.url", jdbcUrl(database, PG_PORT));
        config.put("broker.type", "rabbitmq");
        RelayProcess.Result migrate = RelayProcess.runCommand(jar, workDir, name + "-migrate", config, "migrate");
        if (migrate.exitCode() != 0) {
            throw new IllegalStateException("queuebox migrate failed (" + migrate.exitCode() + "): " + migrate.output());
        }
        return database;
    }

    /** Drops the scenario's database and any replication slot it left. */
    void dropDatabase(String database) {
        try (Connection admin = DriverManager.getConnection(jdbcUrl("postgres", PG_PORT));
             Statement statement = admin.createStatement()) {
            statement.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "' AND active");
            statement.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                    + " WHERE database = '" + database + "' AND NOT active");
            statement.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
        } catch (SQLException e) {
            System.err.println("could not drop " + database + ": " + e.getMessage());
        }
    }

    static String postgresVersion() throws IOException {
        try (var versions = Files.list(Path.of("/etc/postgresql"))) {
            return versions.map(p -> p.getFileName().toString())
                    .max(java.util.Comparator.comparingDouble(Double::parseDouble)).orElseThrow();
        }
    }

    /** {@code pg_ctlcluster <version> main <action>} (restart, stop, start). */
    static void postgres(String action) throws IOException, InterruptedException {
        run(List.of("pg_ctlcluster", "--skip-systemctl-redirect", postgresVersion(), "main", action));
    }

    /** {@code rabbitmqctl <action>} (stop_app, start_app, await_startup). */
    static void rabbitmq(String... action) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("rabbitmqctl", "-q"));
        command.addAll(List.of(action));
        run(command);
    }

    static void run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(3, TimeUnit.MINUTES) || process.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + output);
        }
    }

    @Override
    public void close() {
        if (kafka != null) {
            kafka.close();
        }
    }
}
