package io.queuebox.embed.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.queuebox.embed.internal.Publishers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {

    private static final String MINIMAL = """
            database:
              url: jdbc:postgresql://db:5432/app
              username: relay
            broker:
              type: rabbitmq
            """;

    @TempDir
    Path dir;

    private Path yaml(String content) throws IOException {
        Path file = dir.resolve("queuebox.yaml");
        Files.writeString(file, content);
        return file;
    }

    private QueueBoxConfig load(String content, Map<String, String> env) throws IOException {
        return new ConfigLoader().file(yaml(content), true).environment(env).brokerNames(Set.of("kafka", "rabbitmq")).load();
    }

    private List<ConfigProblem> problemsOf(String content, Map<String, String> env) {
        try {
            load(content, env);
        } catch (ConfigException e) {
            return e.problems();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        throw new AssertionError("expected configuration problems");
    }

    @Test
    void nestedYamlBecomesDottedKeysAndDefaultsFillTheRest() throws IOException {
        QueueBoxConfig config = load(MINIMAL + """
                outbox:
                  batchSize: 250
                  retry:
                    multiplier: 1.5
                """, Map.of());

        assertThat(config.string(Keys.DATABASE_URL)).isEqualTo("jdbc:postgresql://db:5432/app");
        assertThat(config.integer(Keys.OUTBOX_BATCH_SIZE)).isEqualTo(250);
        assertThat(config.decimal(Keys.RETRY_MULTIPLIER)).isEqualTo(1.5);
        assertThat(config.millis(Keys.OUTBOX_POLL_INTERVAL_MS)).isEqualTo(Duration.ofMillis(500));
        assertThat(config.string(Keys.OUTBOX_ORDERING)).isEqualTo("per-aggregate");
        assertThat(config.bool(Keys.CAPTURE_ENABLED)).isFalse();
    }

    @Test
    void environmentVariableNamedByTheRuleOverridesTheFile() throws IOException {
        QueueBoxConfig config = load(MINIMAL + "outbox:\n  pollIntervalMs: 2000\n",
                Map.of("QUEUEBOX_OUTBOX_POLL_INTERVAL_MS", "250",
                        "QUEUEBOX_DATABASE_POOL_MAX_SIZE", "20",
                        "QUEUEBOX_OUTBOX_CAPTURE_CONNECTION_HOST", "replica",
                        "PATH", "/usr/bin"));

        assertThat(config.longValue(Keys.OUTBOX_POLL_INTERVAL_MS)).isEqualTo(250);
        assertThat(config.integer(Keys.DATABASE_POOL_MAX_SIZE)).isEqualTo(20);
        assertThat(config.string(Keys.CAPTURE_HOST)).isEqualTo("replica");
        assertThat(config.describe()).contains(
                "outbox.pollIntervalMs = 250  (env QUEUEBOX_OUTBOX_POLL_INTERVAL_MS)");
    }

    @Test
    void envNameRuleSplitsCamelCaseAndDots() {
        assertThat(EnvNames.forKey("outbox.pollIntervalMs")).isEqualTo("QUEUEBOX_OUTBOX_POLL_INTERVAL_MS");
        assertThat(EnvNames.forKey("database.pool.maxSize")).isEqualTo("QUEUEBOX_DATABASE_POOL_MAX_SIZE");
        assertThat(EnvNames.forKey("broker.kafka.bootstrap.servers")).isEqualTo("QUEUEBOX_BROKER_KAFKA_BOOTSTRAP_SERVERS");
    }

    @Test
    void eachBrokersPublishTimeoutReachesItsAdapterWhichNamesTheKeyWhenTheValueIsBad() throws IOException {
        QueueBoxConfig kafka = load(MINIMAL.replace("type: rabbitmq", "type: kafka") + """
                  kafka:
                    bootstrap.servers: 127.0.0.1:1
                """, Map.of("QUEUEBOX_BROKER_KAFKA_PUBLISH_TIMEOUT_MS", "0"));
        QueueBoxConfig rabbit = load(MINIMAL, Map.of("QUEUEBOX_BROKER_RABBITMQ_CONFIRM_TIMEOUT_MS", "soon"));

        assertThat(kafka.brokerSettings()).containsEntry("publish.timeout.ms", "0");
        assertThatThrownBy(() -> Publishers.create("kafka", kafka.brokerSettings()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("publish.timeout.ms").hasMessageContaining("'0'");
        assertThatThrownBy(() -> Publishers.create("rabbitmq", rabbit.brokerSettings()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("confirm.timeout.ms").hasMessageContaining("'soon'");
    }

    @Test
    void brokerSettingsComeFromFileAndEnvironmentWithoutTheirPrefix() throws IOException {
        QueueBoxConfig config = load(MINIMAL + """
                  rabbitmq:
                    uri: amqp://guest:guest@127.0.0.1:5672/%2F
                    exchange: orders
                  kafka:
                    bootstrap.servers: [a:9092, b:9092]
                """, Map.of("QUEUEBOX_BROKER_RABBITMQ_EXCHANGE", "events",
                        "QUEUEBOX_BROKER_RABBITMQ_CONFIRM_TIMEOUT_MS", "5000"));

        assertThat(config.brokerSettings()).containsExactlyInAnyOrderEntriesOf(Map.of(
                "uri", "amqp://guest:guest@127.0.0.1:5672/%2F",
                "exchange", "events",
                "confirm.timeout.ms", "5000"));
        assertThat(String.join("\n", config.describe()))
                .contains("broker.kafka.bootstrap.servers = a:9092,b:9092")
                .contains("broker.rabbitmq.uri = amqp://guest:******@127.0.0.1:5672/%2F")
                .doesNotContain("guest@");
    }

    @Test
    void everyProblemIsReportedAtOnceWithKeyValueAndWhatIsAllowed() {
        List<ConfigProblem> problems = problemsOf("""
                database:
                  url: mysql://db/app
                broker:
                  type: rabbitmq
                outbox:
                  batchSize: lots
                  workers: 0
                  pipelineDepth: 5
                  ordering: random
                  retry:
                    jitter: 1.5
                """, Map.of("QUEUEBOX_OUTBOX_LEASE_MS", "-1"));

        assertThat(problems).extracting(ConfigProblem::key).containsExactlyInAnyOrder(
                "database.url", "outbox.batchSize", "outbox.workers", "outbox.pipelineDepth", "outbox.ordering",
                "outbox.retry.jitter", "outbox.leaseMs");
        assertThat(problems).filteredOn(p -> p.key().equals("outbox.ordering")).singleElement()
                .satisfies(p -> {
                    assertThat(p.value()).isEqualTo("random");
                    assertThat(p.problem()).contains("per-aggregate, none");
                });
        assertThat(problems).filteredOn(p -> p.key().equals("outbox.workers")).singleElement()
                .satisfies(p -> assertThat(p.problem()).contains("from 1 to 256"));
        assertThat(problems).filteredOn(p -> p.key().equals("outbox.pipelineDepth")).singleElement()
                .satisfies(p -> {
                    assertThat(p.value()).isEqualTo("5");
                    assertThat(p.problem()).contains("from 1 to 4");
                });
    }

    @Test
    void thePoolMustCoverEveryBatchEveryWorkerMayHaveOut() throws IOException {
        String yaml = MINIMAL + """
                outbox:
                  workers: 3
                  pipelineDepth: %d
                """;
        Map<String, String> pool = Map.of("QUEUEBOX_DATABASE_POOL_MAX_SIZE", "8");

        assertThat(load(yaml.formatted(2), pool).integer(Keys.OUTBOX_PIPELINE_DEPTH)).as("3 x 2 + 1 = 7 <= 8")
                .isEqualTo(2);
        assertThat(problemsOf(yaml.formatted(3), pool)).singleElement().satisfies(p -> {
            assertThat(p.key()).isEqualTo("database.pool.maxSize");
            assertThat(p.value()).isEqualTo("8");
            assertThat(p.problem()).contains("outbox.workers × outbox.pipelineDepth + 1 (10)");
        });
    }

    @Test
    void missingRequiredKeysAreProblemsNamingTheirEnvironmentVariable() {
        List<ConfigProblem> problems = problemsOf("outbox:\n  batchSize: 10\n", Map.of());

        assertThat(problems).extracting(ConfigProblem::key).containsExactlyInAnyOrder("database.url", "broker.type");
        assertThat(problems.get(0).problem()).contains("QUEUEBOX_DATABASE_URL");
    }

    @Test
    void aRemoteConsoleMustNameTheHostsItIsServedUnder() throws IOException {
        String remote = MINIMAL + "console:\n  enabled: true\n  allowRemote: true\n";

        assertThat(problemsOf(remote, Map.of())).extracting(ConfigProblem::toString).singleElement().asString()
                .startsWith("console.allowedHosts: required when console.allowRemote is true");
        assertThat(load(remote + "  allowedHosts: 'console.example.com, 10.0.0.5:8080, [fd00::1]:8080'\n", Map.of())
                .optional(Keys.CONSOLE_ALLOWED_HOSTS)).hasValue("console.example.com, 10.0.0.5:8080, [fd00::1]:8080");
        assertThat(load(MINIMAL + "console:\n  enabled: true\n", Map.of()).optional(Keys.CONSOLE_ALLOWED_HOSTS))
                .as("loopback only").isEmpty();
    }

    @Test
    void anAllowedHostThatIsNotAHostOrHostAndPortIsRefused() {
        List<ConfigProblem> problems = problemsOf(MINIMAL
                + "console:\n  enabled: true\n  allowedHosts: 'ok.example, http://bad.example/, *'\n", Map.of());

        assertThat(problems).extracting(ConfigProblem::problem).containsExactlyInAnyOrder(
                "'http://bad.example/' is not a host or host:port (no scheme, path or wildcard)",
                "'*' is not a host or host:port (no scheme, path or wildcard)");
        assertThat(problems).extracting(ConfigProblem::key).containsOnly("console.allowedHosts");
    }

    @Test
    void theValueOfAnUnknownKeyIsNeverShownForItMayBeAMisspeltSecret() {
        List<ConfigProblem> problems = problemsOf(MINIMAL + "console:\n  adminTokn: s3cr3t-0123456789abcdef\n",
                Map.of("QUEUEBOX_CONSOLE_ADMINTOKN", "s3cr3t-0123456789abcdef"));

        assertThat(problems).extracting(ConfigProblem::value).containsOnlyNulls();
        assertThat(problems).extracting(ConfigProblem::toString).noneMatch(text -> text.contains("s3cr3t"));
        assertThat(problems).extracting(ConfigProblem::toString).anyMatch(text -> text.contains("did you mean console.adminToken?"));
    }

    @Test
    void unknownKeySuggestsTheClosestKnownOne() {
        List<ConfigProblem> problems = problemsOf(MINIMAL + """
                outbox:
                  pollIntervallMs: 100
                  batchsize: 5
                  completelyUnrelated: x
                """, Map.of("QUEUEBOX_OUTBOX_BATCHSIZE", "5"));

        assertThat(problems).extracting(ConfigProblem::toString).containsExactlyInAnyOrder(
                "outbox.pollIntervallMs: unknown key (from file " + dir.resolve("queuebox.yaml")
                        + "); did you mean outbox.pollIntervalMs?",
                "outbox.batchsize: unknown key (from file " + dir.resolve("queuebox.yaml")
                        + "); did you mean outbox.batchSize?",
                "outbox.completelyUnrelated: unknown key (from file " + dir.resolve("queuebox.yaml") + ")",
                "QUEUEBOX_OUTBOX_BATCHSIZE: unknown environment variable (a QUEUEBOX_ variable must name a"
                        + " configuration key); did you mean QUEUEBOX_OUTBOX_BATCH_SIZE?");
    }

    @Test
    void unknownBrokerTypeSuggestsAProvider() {
        List<ConfigProblem> problems = problemsOf(MINIMAL.replace("rabbitmq", "rabbit"), Map.of());

        assertThat(problems).singleElement().satisfies(p -> {
            assertThat(p.key()).isEqualTo("broker.type");
            assertThat(p.problem()).contains("allowed: kafka, rabbitmq").contains("did you mean rabbitmq?");
        });
    }

    @Test
    void crossKeyRulesAreChecked() {
        List<ConfigProblem> problems = problemsOf(MINIMAL + """
                outbox:
                  workers: 12
                  retry:
                    initialMs: 5000
                    maxMs: 1000
                """, Map.of());

        assertThat(problems).extracting(ConfigProblem::key)
                .containsExactlyInAnyOrder("outbox.retry.maxMs", "database.pool.maxSize");
    }

    @Test
    void passwordComesFromPasswordFileOrFileReference() throws IOException {
        Path secret = Files.writeString(dir.resolve("db-password"), "s3cr3t\n");
        Path captureSecret = Files.writeString(dir.resolve("capture-password"), "c4pture");

        QueueBoxConfig config = load(MINIMAL.replace("username: relay",
                        "username: relay\n  passwordFile: " + secret), Map.of(
                "QUEUEBOX_OUTBOX_CAPTURE_CONNECTION_PASSWORD", "file:" + captureSecret));

        assertThat(config.string(Keys.DATABASE_PASSWORD)).isEqualTo("s3cr3t");
        assertThat(config.string(Keys.CAPTURE_PASSWORD)).isEqualTo("c4pture");
        assertThat(String.join("\n", config.describe())).doesNotContain("s3cr3t").doesNotContain("c4pture")
                .contains("database.password = ******");
    }

    @Test
    void unreadableSecretFileIsAProblemWithoutLeakingAnything() {
        List<ConfigProblem> problems = problemsOf(MINIMAL.replace("username: relay",
                "username: relay\n  passwordFile: " + dir.resolve("absent")), Map.of());

        assertThat(problems).singleElement().satisfies(p -> {
            assertThat(p.key()).isEqualTo("database.passwordFile");
            assertThat(p.problem()).contains("cannot read the secret file");
        });
    }

    @Test
    void secretsAndUrlPasswordsAreMaskedWhenPrinted() throws IOException {
        QueueBoxConfig config = load("""
                database:
                  url: jdbc:postgresql://db:5432/app?user=relay&password=hunter2&ssl=true
                  password: hunter3
                broker:
                  type: kafka
                  kafka:
                    sasl.jaas.config: org.apache.kafka.common.security.plain.PlainLoginModule required password="x";
                """, Map.of());

        String printed = config.toString();
        assertThat(printed).doesNotContain("hunter2").doesNotContain("hunter3").doesNotContain("PlainLoginModule")
                .contains("database.url = jdbc:postgresql://db:5432/app?user=relay&password=******&ssl=true")
                .contains("database.password = ******")
                .contains("broker.kafka.sasl.jaas.config = ******");
    }

    @Test
    void anExplicitConfigFileMustExistButTheDefaultOneMayBeAbsent() {
        assertThatThrownBy(() -> new ConfigLoader().file(dir.resolve("nope.yaml"), true)
                .environment(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://h/d", "QUEUEBOX_BROKER_TYPE", "kafka"))
                .load())
                .isInstanceOf(ConfigException.class).hasMessageContaining("the file does not exist");

        QueueBoxConfig config = new ConfigLoader().file(dir.resolve("nope.yaml"), false)
                .environment(Map.of("QUEUEBOX_DATABASE_URL", "jdbc:postgresql://h/d", "QUEUEBOX_BROKER_TYPE", "kafka"))
                .load();
        assertThat(config.string(Keys.BROKER_TYPE)).isEqualTo("kafka");
    }

    @Test
    void invalidYamlIsAProblem() {
        List<ConfigProblem> problems = problemsOf("database: [unclosed", Map.of());

        assertThat(problems).extracting(ConfigProblem::key).contains("--config");
        assertThat(problems.get(0).problem()).startsWith("not valid YAML");
    }

    @Test
    void malformedYamlIsTheOnlyProblemReportedWithItsLineAndColumn() {
        List<ConfigProblem> problems = problemsOf("""
                database:
                  url: jdbc:postgresql://db:5432/app
                 broker:
                  type: kafka
                """, Map.of());

        assertThat(problems).hasSize(1);
        assertThat(problems.get(0).problem()).isEqualTo("not valid YAML at line 3, column 2: expected <block end>,"
                + " but found '<block mapping start>' (while parsing a block mapping that starts at line 1, column 1);"
                + " fix the indentation or quoting there");
    }

    @Test
    void testHarnessVariablesAreIgnored() throws IOException {
        QueueBoxConfig config = load(MINIMAL, Map.of("QUEUEBOX_TEST_REQUIRE", "postgres"));

        assertThat(config.string(Keys.BROKER_TYPE)).isEqualTo("rabbitmq");
    }

    @Test
    void environmentReferencesInTheFileAreExpandedWithTheirDefaults() throws IOException {
        QueueBoxConfig config = load("""
                database:
                  url: jdbc:postgresql://${DB_HOST}:${DB_PORT:-5432}/app
                  password: ${QUEUEBOX_DB_PASSWORD}
                broker:
                  type: ${BROKER:-rabbitmq}
                outbox:
                  batchSize: ${BATCH:-250}
                """, Map.of("DB_HOST", "db.internal", "QUEUEBOX_DB_PASSWORD", "s3cret"));

        assertThat(config.string(Keys.DATABASE_URL)).isEqualTo("jdbc:postgresql://db.internal:5432/app");
        assertThat(config.string(Keys.BROKER_TYPE)).isEqualTo("rabbitmq");
        assertThat(config.integer(Keys.OUTBOX_BATCH_SIZE)).isEqualTo(250);
        assertThat(config.optional(Keys.DATABASE_PASSWORD)).contains("s3cret");
        // The variable the file reads is not an unknown QUEUEBOX_ setting, and the secret stays masked.
        assertThat(String.join("\n", config.describe())).doesNotContain("s3cret").contains("database.password = ****");
    }

    @Test
    void aDoubledDollarKeepsAReferenceLiteral() throws IOException {
        QueueBoxConfig config = load(MINIMAL + "broker.rabbitmq.connection.name: \"$${HOSTNAME}\"\n", Map.of("HOSTNAME", "h"));

        assertThat(config.describe()).anyMatch(line -> line.startsWith("broker.rabbitmq.connection.name = ${HOSTNAME}"));
    }

    @Test
    void anUnsetVariableWithoutADefaultIsAProblemNamingTheKeyAndTheVariable() {
        List<ConfigProblem> problems = problemsOf(MINIMAL.replace("username: relay", "username: ${DB_USER}"), Map.of());

        assertThat(problems).anySatisfy(problem -> {
            assertThat(problem.key()).isEqualTo("database.username");
            assertThat(problem.problem()).contains("DB_USER is not set").contains("${DB_USER:-<default>}");
        });
    }
}
