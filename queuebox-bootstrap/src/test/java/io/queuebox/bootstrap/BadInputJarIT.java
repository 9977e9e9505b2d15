package io.queuebox.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.queuebox.embed.config.EnvNames;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input given to the shaded jar as operators run it (a separate JVM, configured by file and
 * environment): every case ends with an error that names the key or value at fault and the fix, exit code 2
 * (3 for a database that does not answer), no stack trace, and nothing written.
 */
class BadInputJarIT {

    private static final Path JAR = Path.of("target", "queuebox.jar").toAbsolutePath();
    /** A stack trace line ("\tat io.queuebox...") or a chained cause, anywhere in the output. */
    private static final String STACK_TRACE = "(?s).*(\\n\\s+at [a-zA-Z_$][\\w$.]*\\(|Caused by: |Exception in thread).*";

    private static TestDatabase database;
    private static RabbitQueue rabbit;

    @TempDir
    Path dir;

    @BeforeAll
    static void services() throws Exception {
        assertThat(JAR).as("the shaded jar is built in package").exists();
        database = TestDatabase.create("badinput");
        rabbit = new RabbitQueue();
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (rabbit != null) {
            try {
                rabbit.close();
            } catch (com.rabbitmq.client.AlreadyClosedException e) {
                // The broker restarted under us (another suite's outage test): nothing is left to close.
            }
        }
        if (database != null) {
            database.close();
        }
    }

    // ---------------------------------------------------------------- configuration

    @Test
    void malformedYamlReportsOnlyTheYamlErrorWithItsLineAndColumn() throws Exception {
        Path file = Files.writeString(dir.resolve("queuebox.yaml"), """
                database:
                  url: jdbc:postgresql://127.0.0.1:5432/test
                 broker:
                  type: rabbitmq
                """);

        Result result = jar(Map.of(), "config", "check", "--config", file.toString());

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output())
                .contains("1 configuration problem(s)")
                .contains("--config = '" + file + "': not valid YAML at line 3, column 2")
                .contains("fix the indentation or quoting there")
                .doesNotContain("required");
        assertNoStackTrace(result);
    }

    @Test
    void aValueOfTheWrongTypeIsRefusedBeforeTheDatabaseIsTouched() throws Exception {
        Result result = jar(relayEnv(Map.of("QUEUEBOX_OUTBOX_BATCH_SIZE", "lots")), "migrate");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("outbox.batchSize = 'lots': not an integer; allowed: an integer from 1 to 10000");
        assertNoStackTrace(result);
        assertThat(tablesIn("public")).as("nothing created").isEmpty();
    }

    @Test
    void anOutOfRangeValueIsRefusedWithTheAllowedRange() throws Exception {
        Result result = jar(relayEnv(Map.of("QUEUEBOX_OUTBOX_WORKERS", "0")), "run");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("outbox.workers = '0': out of range; allowed: an integer from 1 to 256");
        assertNoStackTrace(result);
    }

    @Test
    void anUnknownKeySuggestsTheKeyItProbablyMeant() throws Exception {
        Path file = Files.writeString(dir.resolve("queuebox.yaml"), """
                outbox:
                  batchSzie: 50
                """);

        Result result = jar(relayEnv(Map.of()), "--config", file.toString(), "migrate");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("outbox.batchSzie: unknown key (from file " + file
                + "); did you mean outbox.batchSize?");
        assertNoStackTrace(result);
        assertThat(tablesIn("public")).isEmpty();
    }

    @Test
    void configCheckRefusesAMisspeltRabbitMqKey() throws Exception {
        Path file = Files.writeString(dir.resolve("queuebox.yaml"), """
                database:
                  url: jdbc:postgresql://127.0.0.1:5432/test
                broker:
                  type: rabbitmq
                  rabbitmq:
                    exchnage: orders
                """);

        Result result = jar(Map.of(), "config", "check", "--config", file.toString());

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output())
                .contains("broker.rabbitmq.exchnage = 'orders': unknown RabbitMQ setting")
                .contains("did you mean 'exchange'?")
                .doesNotContain("Configuration is valid");
        assertNoStackTrace(result);
    }

    @Test
    void configCheckRefusesBadBrokerValuesAsRunDoes() throws Exception {
        Result rabbitMq = jar(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:5432/test",
                "QUEUEBOX_BROKER_TYPE", "rabbitmq", "QUEUEBOX_BROKER_RABBITMQ_CONFIRM_TIMEOUT_MS", "abc"), "config", "check");
        Result kafka = jar(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:5432/test",
                "QUEUEBOX_BROKER_TYPE", "kafka", "QUEUEBOX_BROKER_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092",
                "QUEUEBOX_BROKER_KAFKA_PUBLISH_TIMEOUT_MS", "-1"), "config", "check");

        assertThat(rabbitMq.exitCode()).as(rabbitMq.output()).isEqualTo(2);
        assertThat(rabbitMq.output()).contains("broker.rabbitmq.confirm.timeout.ms = 'abc': "
                + "confirm.timeout.ms must be a whole number from 1 to 600000");
        assertThat(kafka.exitCode()).as(kafka.output()).isEqualTo(2);
        assertThat(kafka.output()).contains("broker.kafka.publish.timeout.ms = '-1': "
                + "publish.timeout.ms must be a whole number of milliseconds from 1 to 600000");
        assertNoStackTrace(rabbitMq);
        assertNoStackTrace(kafka);
    }

    @Test
    void sqlIdentifiersWithInjectionAttemptsAreRefusedBeforeAnySql() throws Exception {
        Path file = Files.writeString(dir.resolve("queuebox.yaml"), """
                outbox:
                  schema: "public; drop table x"
                  table: '"x"'
                  capture:
                    slot: a--b
                    publication: "p'); drop publication q; --"
                """);

        Result result = jar(relayEnv(Map.of()), "--config", file.toString(), "migrate");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output())
                .contains("4 configuration problem(s)")
                .contains("outbox.schema = 'public; drop table x': not a valid identifier: use 1-63 lower-case letters, digits or '_',"
                        + " starting with a letter or '_' (PostgreSQL)")
                .contains("outbox.table = '\"x\"': not a valid identifier")
                .contains("outbox.capture.slot = 'a--b': not a valid identifier")
                .contains("outbox.capture.publication = 'p'); drop publication q; --': not a valid identifier");
        assertNoStackTrace(result);
        assertThat(tablesIn("public")).isEmpty();
        assertThat(schemas()).doesNotContain("public; drop table x");
    }

    // ---------------------------------------------------------------- database account and reachability

    @Test
    void aWrongPasswordFailsFastNamingTheAccountKeysAndNeverPrintsThePassword() throws Exception {
        Path data = Files.createTempDirectory("queuebox-scram");
        // The shared server trusts every local connection: a private one that asks for a password.
        try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setDataDirectory(data).setCleanDataDirectory(true)
                .setRegisterShutdownHook(false).setOutputRedirector(ProcessBuilder.Redirect.DISCARD)
                .setErrorRedirector(ProcessBuilder.Redirect.DISCARD).start()) {
            try (Connection connection = postgres.getPostgresDatabase().getConnection();
                 Statement statement = connection.createStatement()) {
                statement.execute("SET password_encryption = 'scram-sha-256'");
                statement.execute("ALTER ROLE postgres PASSWORD 'right-secret'");
                Files.writeString(data.resolve("pg_hba.conf"), """
                        local all all trust
                        host all all 127.0.0.1/32 scram-sha-256
                        host all all ::1/128 scram-sha-256
                        """);
                statement.execute("SELECT pg_reload_conf()");
            }
            long start = System.nanoTime();
            Result result = jar(relayEnv(Map.of(
                    "QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/postgres",
                    "QUEUEBOX_DATABASE_USERNAME", "postgres",
                    "QUEUEBOX_DATABASE_PASSWORD", "wrong-secret-4711",
                    "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "60000")), "migrate");
            Duration took = Duration.ofNanos(System.nanoTime() - start);

            assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
            assertThat(result.output())
                    .contains("password authentication failed for user \"postgres\"")
                    .contains("database.username").contains("database.password")
                    .doesNotContain("wrong-secret-4711");
            assertThat(took).as("an authentication failure is not waited out").isLessThan(Duration.ofSeconds(30));
            assertNoStackTrace(result);
        }
    }

    @Test
    void anUnknownRoleFailsFastNamingTheUsername() throws Exception {
        long start = System.nanoTime();
        Result result = jar(relayEnv(Map.of("QUEUEBOX_DATABASE_USERNAME", "no_such_role_4711",
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "60000")), "run");
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("database.username = 'no_such_role_4711'")
                .contains("role \"no_such_role_4711\" does not exist");
        assertThat(took).isLessThan(Duration.ofSeconds(30));
        assertNoStackTrace(result);
    }

    @Test
    void aRefusedConnectionIsWaitedForThenReportedWithItsCause() throws Exception {
        Result result = jar(relayEnv(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://127.0.0.1:1/none",
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "2000", "QUEUEBOX_DATABASE_POOL_CONNECTION_TIMEOUT_MS", "500")), "migrate");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(3);
        assertThat(result.output())
                .contains("did not answer within 2000 ms (startup.databaseWaitMs)")
                .contains("Connection to 127.0.0.1:1 refused")
                .contains("check database.url")
                .doesNotContain("Connection is not available, request timed out");
        assertNoStackTrace(result);
    }

    @Test
    void anUnknownHostIsReportedByName() throws Exception {
        Result result = jar(relayEnv(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://no-such-host.invalid:5432/none",
                "QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "2000", "QUEUEBOX_DATABASE_POOL_CONNECTION_TIMEOUT_MS", "500")), "run");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(3);
        assertThat(result.output()).contains("unknown host no-such-host.invalid")
                .doesNotContain("Connection is not available, request timed out");
        assertNoStackTrace(result);
    }

    // ---------------------------------------------------------------- database rights

    @Test
    void migrateAsARoleThatCannotCreateInTheSchemaNamesTheMissingRightAndTheGrant() throws Exception {
        try (TestRole role = TestRole.create()) {
            Result result = jar(relayEnv(Map.of("QUEUEBOX_DATABASE_USERNAME", role.name())), "migrate");

            assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
            assertThat(result.output())
                    .contains("role " + role.name() + " cannot create in schema public")
                    .contains("GRANT USAGE, CREATE ON SCHEMA public TO " + role.name());
            assertNoStackTrace(result);
            assertThat(tablesIn("public")).isEmpty();
        }
    }

    @Test
    void migrateIntoANewSchemaAsARoleThatCannotCreateSchemasNamesTheGrant() throws Exception {
        try (TestRole role = TestRole.create()) {
            Result result = jar(relayEnv(Map.of("QUEUEBOX_DATABASE_USERNAME", role.name(),
                    "QUEUEBOX_OUTBOX_SCHEMA", "relay_" + role.name())), "migrate");

            assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
            assertThat(result.output())
                    .contains("role " + role.name() + " cannot create schema relay_" + role.name())
                    .contains("GRANT CREATE ON DATABASE " + database.name() + " TO " + role.name());
            assertNoStackTrace(result);
            assertThat(schemas()).doesNotContain("relay_" + role.name());
        }
    }

    @Test
    void runAsARoleWithoutRightsOnTheOutboxTableNamesThemAndTheGrant() throws Exception {
        String schema = "rights_" + UUID.randomUUID().toString().substring(0, 6);
        Result migrate = jar(relayEnv(Map.of("QUEUEBOX_OUTBOX_SCHEMA", schema)), "migrate");
        assertThat(migrate.exitCode()).as(migrate.output()).isZero();
        try (TestRole role = TestRole.create()) {
            database.execute("GRANT USAGE ON SCHEMA " + schema + " TO " + role.name(),
                    "GRANT SELECT ON " + schema + ".queuebox_outbox TO " + role.name());

            Result result = jar(relayEnv(Map.of("QUEUEBOX_DATABASE_USERNAME", role.name(),
                    "QUEUEBOX_OUTBOX_SCHEMA", schema)), "run");

            assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
            assertThat(result.output())
                    .contains("role " + role.name() + " lacks UPDATE, DELETE on " + schema + ".queuebox_outbox")
                    .contains("GRANT SELECT, UPDATE, DELETE ON " + schema + ".queuebox_outbox TO " + role.name());
            assertNoStackTrace(result);
        }
    }

    // ---------------------------------------------------------------- rows the relay cannot deliver

    @Test
    void rowsWithHeadersThatAreNotAnObjectOfStringsOrAnOversizedPayloadAreParkedAndDeliveryGoesOn() throws Exception {
        String schema = "rows_" + UUID.randomUUID().toString().substring(0, 6);
        Result migrate = jar(relayEnv(Map.of("QUEUEBOX_OUTBOX_SCHEMA", schema)), "migrate");
        assertThat(migrate.exitCode()).as(migrate.output()).isZero();
        String table = schema + ".queuebox_outbox";
        UUID array = UUID.randomUUID();
        UUID nullValue = UUID.randomUUID();
        UUID large = UUID.randomUUID();
        UUID good = UUID.randomUUID();
        database.execute("INSERT INTO " + table + " (event_id, aggregate_type, aggregate_id, event_type, payload, headers)"
                + " VALUES ('" + array + "', 'order', 'a', 'OrderPlaced', '\\x7b7d', '[\"traceparent\", 1]'),"
                + " ('" + nullValue + "', 'order', 'b', 'OrderPlaced', '\\x7b7d', '{\"traceparent\": null}'),"
                + " ('" + large + "', 'order', 'c', 'OrderPlaced', decode(repeat('7b', 2048), 'hex'), '{}'),"
                + " ('" + good + "', 'order', 'd', 'OrderPlaced', '\\x7b7d', '{\"traceparent\": \"00-1\"}')");

        Path log = dir.resolve("run.log");
        Process relay = start(log, relayEnv(Map.of("QUEUEBOX_OUTBOX_SCHEMA", schema,
                "QUEUEBOX_OUTBOX_MAX_PAYLOAD_BYTES", "1024")), "run");
        try {
            // Read from the table, not the queue: the broker confirmed the good row when it is sent.
            // Other suites on this server restart PostgreSQL for their outage tests: poll through it.
            await().atMost(Duration.ofSeconds(120)).ignoreExceptions().untilAsserted(() -> {
                assertThat(database.count(table, "event_id = '" + good + "' AND status = 'sent'"))
                        .as(Files.readString(log)).isEqualTo(1);
                assertThat(database.count(table, "status = 'parked'")).as(Files.readString(log)).isEqualTo(3);
            });
        } finally {
            relay.destroy();
            relay.waitFor(30, TimeUnit.SECONDS);
            relay.destroyForcibly();
        }
        assertThat(database.lastError(table, array)).isEqualTo("headers is a JSON array, not an object of strings: "
                + "[\"traceparent\", 1]; write the headers column as {\"name\": \"value\", ...} and replay the event");
        assertThat(database.lastError(table, nullValue)).isEqualTo("header 'traceparent' is JSON null, not a string; "
                + "write the headers column as {\"name\": \"value\", ...} and replay the event");
        assertThat(database.lastError(table, large)).isEqualTo("payload is 2048 bytes, more than outbox.maxPayloadBytes"
                + " (1024); raise outbox.maxPayloadBytes (and the broker's limit) or make the event smaller, then replay it");
        assertThat(Files.readString(log)).doesNotContain("cannot call jsonb_each_text");

        Result parked = jar(relayEnv(Map.of("QUEUEBOX_OUTBOX_SCHEMA", schema)), "outbox", "parked");
        assertThat(parked.exitCode()).as(parked.output()).isZero();
        assertThat(parked.output()).contains("3 parked event(s)").contains("headers is a JSON array");
    }

    // ---------------------------------------------------------------- capture state directory

    @Test
    void aCaptureStateDirectoryUnderARegularFileIsRefusedByConfigCheck() throws Exception {
        // Works as root too: not even root can create a directory inside a regular file.
        Path file = Files.writeString(dir.resolve("not-a-directory"), "x");
        Path state = file.resolve("capture");

        Result result = jar(captureEnv(state), "config", "check");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(2);
        assertThat(result.output()).contains("outbox.capture.stateDirectory = '" + state + "': cannot be created: "
                + file + " is a regular file, not a directory");
        assertNoStackTrace(result);
        assertThat(Files.readString(file)).isEqualTo("x");
    }

    @Test
    void aCaptureStateDirectoryOwnedByAnotherUserIsRefusedByConfigCheckAndLoggedAtErrorByRun() throws Exception {
        Path state = Files.createDirectory(dir.resolve("capture-state"));
        dir.toFile().setExecutable(true, false);
        boolean root = isRoot();
        if (!root) {
            // As an ordinary user, a directory of one's own made read-only stands for one of another user.
            state.toFile().setWritable(false, false);
        }
        // As root, run the jar as nobody: root writes anywhere, nobody does not own the root-owned directory.
        List<String> asOther = root ? List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups") : List.of();
        String user = root ? "nobody" : System.getProperty("user.name");

        Result check = jar(asOther, captureEnv(state), "config", "check");

        assertThat(check.exitCode()).as(check.output()).isEqualTo(2);
        assertThat(check.output()).contains("outbox.capture.stateDirectory = '" + state + "': not writable by user '"
                + user + "'");
        if (root) {
            assertThat(check.output()).contains("owned by 'root'").contains("chown " + user + " " + state);
        }
        assertNoStackTrace(check);

        String schema = "capture_" + UUID.randomUUID().toString().substring(0, 6);
        Result migrate = jar(relayEnv(Map.of("QUEUEBOX_OUTBOX_SCHEMA", schema)), "migrate");
        assertThat(migrate.exitCode()).as(migrate.output()).isZero();
        Map<String, String> runEnv = new HashMap<>(captureEnv(state));
        runEnv.put("QUEUEBOX_OUTBOX_SCHEMA", schema);
        runEnv.put("QUEUEBOX_LOG_FORMAT", "text"); // JSON would escape the path's slashes
        Path log = dir.resolve("capture-run.log");
        Process relay = start(asOther, log, runEnv, "run");
        try {
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(Files.readString(log))
                    .containsPattern("ERROR .*Relay - outbox.capture.stateDirectory")
                    .contains("outbox.capture.stateDirectory = '" + state + "': not writable by user '" + user + "'"));
        } finally {
            relay.destroy();
            relay.waitFor(30, TimeUnit.SECONDS);
            relay.destroyForcibly();
        }
        try (Stream<Path> files = Files.list(state)) {
            assertThat(files).as("nothing written").isEmpty();
        }
    }

    // ---------------------------------------------------------------- helpers

    private record Result(int exitCode, String output) {
    }

    private static void assertNoStackTrace(Result result) {
        assertThat(result.output()).as("no stack trace").doesNotMatch(STACK_TRACE);
    }

    private static boolean isRoot() {
        return "root".equals(ProcessHandle.current().info().user().orElse(""));
    }

    /** A complete relay configuration for the test database and RabbitMQ, with the given variables on top. */
    private static Map<String, String> relayEnv(Map<String, String> overrides) {
        Map<String, String> env = new HashMap<>();
        RelayTest.configFor(database.url(), rabbit).forEach((key, value) -> env.put(EnvNames.forKey(key), value));
        env.put("QUEUEBOX_LOG_FORMAT", "json");
        env.put("QUEUEBOX_STARTUP_DATABASE_WAIT_MS", "10000");
        if (overrides.containsKey("QUEUEBOX_DATABASE_USERNAME")) {
            // The URL's user= would win over database.username.
            env.put("QUEUEBOX_DATABASE_URL", database.url().replaceFirst("\\?.*", ""));
        }
        env.putAll(overrides);
        return env;
    }

    private static Map<String, String> captureEnv(Path state) {
        return relayEnv(Map.of("QUEUEBOX_OUTBOX_CAPTURE_ENABLED", "true",
                "QUEUEBOX_OUTBOX_CAPTURE_MODE", "postgres-logical",
                "QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY", state.toString()));
    }

    private Result jar(Map<String, String> env, String... args) throws Exception {
        return jar(List.of(), env, args);
    }

    private Result jar(List<String> prefix, Map<String, String> env, String... args) throws Exception {
        Path log = Files.createTempFile(dir, "jar", ".log");
        log.toFile().setWritable(true, false);
        Process process = start(prefix, log, env, args);
        boolean ended = process.waitFor(120, TimeUnit.SECONDS);
        if (!ended) {
            process.destroyForcibly();
        }
        assertThat(ended).as("the jar ended: " + Files.readString(log, StandardCharsets.UTF_8)).isTrue();
        return new Result(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }

    private Process start(Path log, Map<String, String> env, String... args) throws IOException {
        return start(List.of(), log, env, args);
    }

    /** The jar in {@link #dir} (so any file it would create shows there), stdout and stderr into {@code log}. */
    private Process start(List<String> prefix, Path log, Map<String, String> env, String... args) throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-jar", JAR.toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile())
                .directory(dir.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("QUEUEBOX_") && !name.startsWith("QUEUEBOX_TEST_"));
        builder.environment().putAll(env);
        return builder.start();
    }

    private static List<String> tablesIn(String schema) throws SQLException {
        return database.strings("SELECT tablename FROM pg_tables WHERE schemaname = '" + schema + "'");
    }

    private static List<String> schemas() throws SQLException {
        return database.strings("SELECT nspname FROM pg_namespace");
    }

    /** A login role with no rights beyond PUBLIC's, dropped (with what it owns) on close. */
    private record TestRole(String name) implements AutoCloseable {

        static TestRole create() throws SQLException {
            TestRole role = new TestRole("qb_weak_" + UUID.randomUUID().toString().substring(0, 8));
            database.execute("CREATE ROLE " + role.name() + " LOGIN");
            return role;
        }

        @Override
        public void close() throws SQLException {
            database.execute("DROP OWNED BY " + name, "DROP ROLE " + name);
        }
    }
}
