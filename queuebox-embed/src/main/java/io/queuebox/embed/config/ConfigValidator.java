package io.queuebox.embed.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import io.queuebox.jdbc.DatabaseProvider;
import io.queuebox.jdbc.OutboxTable;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/** Checks every value against its key and the keys against each other, and reports every problem at once. */
final class ConfigValidator {

    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final Pattern INTEGER = Pattern.compile("[+-]?\\d{1,18}");

    private final Set<String> brokerNames;

    /** @param brokerNames the broker providers found on the class path; empty to accept any name */
    ConfigValidator(Set<String> brokerNames) {
        this.brokerNames = Set.copyOf(brokerNames);
    }

    static final int MIN_CONSOLE_TOKEN_LENGTH = 16;
    /** An entry of console.allowedHosts: a name, an IPv4 or a bracketed IPv6 address, and an optional port. */
    private static final Pattern HOST_ENTRY =
            Pattern.compile("(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)(?::(6553[0-5]|655[0-2]\\d|65[0-4]\\d{2}|6[0-4]\\d{3}|[1-5]?\\d{1,4}))?");

    /** @param given the values given by file and environment, without defaults, secrets already resolved */
    List<ConfigProblem> validate(Map<String, ConfigValue> given) {
        List<ConfigProblem> problems = new ArrayList<>();
        ConfigValue url = given.get(Keys.DATABASE_URL.name());
        Optional<DatabaseProvider> database = url == null ? Optional.empty() : Databases.forUrl(url.value().trim());
        Collection<String> known = Keys.all().stream().map(ConfigKey::name).collect(Collectors.toList());
        given.forEach((name, value) -> {
            ConfigKey key = Keys.find(name).orElse(null);
            if (key != null) {
                checkValue(key, value.value()).or(() -> notForThisDatabase(key, database)).ifPresent(problem ->
                        problems.add(new ConfigProblem(name, Masking.forDisplay(name, value.value()), problem)));
            } else if (!Keys.isBrokerSetting(name)) {
                // No value: masking knows secrets by their exact key names, and a misspelt one
                // (console.adminTokn) is exactly the key whose value the operator meant to keep secret.
                String suggestion = Suggestions.closest(name, known).map(s -> "; did you mean " + s + "?").orElse("");
                problems.add(new ConfigProblem(name, null, "unknown key (from " + value.origin() + ")" + suggestion));
            }
        });
        for (ConfigKey key : Keys.all()) {
            if (key.required() && (!given.containsKey(key.name()) || given.get(key.name()).value().isBlank())) {
                problems.add(new ConfigProblem(key.name(), null, "required: " + key.allowedDescription()
                        + " (or set " + key.envName() + ")"));
            }
        }
        database.ifPresent(db -> checkOutboxTable(given, db, problems));
        if (problems.isEmpty()) {
            crossCheck(given, database.orElseThrow(), problems);
        }
        return problems;
    }

    /**
     * Schema and table by the database's identifier rules, each checked on its own (beside the other's default)
     * so that both are reported when both are wrong.
     */
    private static void checkOutboxTable(Map<String, ConfigValue> given, DatabaseProvider database,
                                         List<ConfigProblem> problems) {
        String schema = given.containsKey(Keys.OUTBOX_SCHEMA.name()) ? valueOf(given, Keys.OUTBOX_SCHEMA) : database.defaultSchema();
        String table = valueOf(given, Keys.OUTBOX_TABLE);
        if (!schema.isEmpty()) {
            database.outboxTableProblem(new OutboxTable(schema, Keys.OUTBOX_TABLE.defaultValue(), false, OptionalInt.empty()))
                    .ifPresent(problem -> problems.add(new ConfigProblem(Keys.OUTBOX_SCHEMA.name(), schema,
                            withoutKeyAndValue(problem, Keys.OUTBOX_SCHEMA.name(), schema) + " (" + database.displayName() + ")")));
        }
        if (!table.isEmpty()) {
            database.outboxTableProblem(new OutboxTable(database.defaultSchema(), table, false, OptionalInt.empty()))
                    .ifPresent(problem -> problems.add(new ConfigProblem(Keys.OUTBOX_TABLE.name(), table,
                            withoutKeyAndValue(problem, Keys.OUTBOX_TABLE.name(), table) + " (" + database.displayName() + ")")));
        }
    }

    /** A key of another database is refused rather than ignored: the operator expects it to do something. */
    private static Optional<String> notForThisDatabase(ConfigKey key, Optional<DatabaseProvider> database) {
        if (database.isEmpty() || key.appliesTo(database.get().name())) {
            return Optional.empty();
        }
        String owner = Databases.available().stream().filter(p -> p.name().equals(key.database()))
                .map(DatabaseProvider::displayName).findFirst().orElse(key.database());
        return Optional.of("applies to " + owner + " only, but database.url is " + database.get().displayName()
                + "; remove the key");
    }

    private Optional<String> checkValue(ConfigKey key, String value) {
        String v = value.trim();
        String allowed = "allowed: " + key.allowedDescription();
        return Optional.ofNullable(switch (key.type()) {
            case STRING, PATH, TABLE_NAME -> v.isEmpty() ? "must not be empty" : null;
            case BOOLEAN -> v.equals("true") || v.equals("false") ? null : "not a boolean; " + allowed;
            case CHOICE -> key.allowed().contains(v) ? null : "not an allowed value; " + allowed;
            case IDENTIFIER -> IDENTIFIER.matcher(v).matches() ? null : "not a valid identifier; " + allowed;
            case JDBC_URL -> jdbcUrlProblem(v, allowed);
            case INTEGER, MILLIS -> {
                if (!INTEGER.matcher(v).matches()) {
                    yield "not an integer; " + allowed;
                }
                long n = Long.parseLong(v);
                yield n < key.min() || n > key.max() ? "out of range; " + allowed : null;
            }
            case DECIMAL -> {
                double d;
                try {
                    d = Double.parseDouble(v);
                } catch (NumberFormatException e) {
                    yield "not a number; " + allowed;
                }
                yield Double.isNaN(d) || d < key.min() || d > key.max() ? "out of range; " + allowed : null;
            }
        });
    }

    /** The adapter's message without the {@code key: 'value' is} it starts with, which the problem shows already. */
    private static String withoutKeyAndValue(String message, String key, String value) {
        for (String prefix : List.of(key + ": '" + value + "' is ", key + ": '" + value + "' ", key + ": ")) {
            if (message.startsWith(prefix)) {
                return message.substring(prefix.length());
            }
        }
        return message;
    }

    private static String jdbcUrlProblem(String url, String allowed) {
        Optional<DatabaseProvider> database = Databases.forUrl(url);
        if (database.isEmpty()) {
            return "no database of this build accepts this URL; " + allowed;
        }
        try {
            database.get().locate(url);
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage().replaceFirst("^database\\.url: ", "");
        }
    }

    private void crossCheck(Map<String, ConfigValue> given, DatabaseProvider database, List<ConfigProblem> problems) {
        long initial = longOf(given, Keys.RETRY_INITIAL_MS);
        long max = longOf(given, Keys.RETRY_MAX_MS);
        if (max < initial) {
            problems.add(new ConfigProblem(Keys.RETRY_MAX_MS.name(), Long.toString(max),
                    "must be at least outbox.retry.initialMs (" + initial + ")"));
        }
        long workers = longOf(given, Keys.OUTBOX_WORKERS);
        long depth = longOf(given, Keys.OUTBOX_PIPELINE_DEPTH);
        long pool = longOf(given, Keys.DATABASE_POOL_MAX_SIZE);
        // With held row locks (outbox.holdRowLocks) every batch a worker has claimed and not yet recorded pins a
        // connection until its outcome: workers × depth, plus one for the renewer, the purge and the checks. With
        // leases a worker uses at most two at once (its claim, its stage's outcome writes), so from depth 3 this
        // asks more than leases need; one rule for both modes keeps it simple, and switching the mode cannot make
        // a valid configuration starve its pool.
        if (pool < workers * depth + 1) {
            problems.add(new ConfigProblem(Keys.DATABASE_POOL_MAX_SIZE.name(), Long.toString(pool),
                    "must be at least outbox.workers × outbox.pipelineDepth + 1 (" + (workers * depth + 1)
                            + "): every batch a worker has claimed and not yet recorded may hold a connection"));
        }
        long socketTimeout = longOf(given, Keys.DATABASE_SOCKET_TIMEOUT_MS);
        database.socketTimeoutProblem(socketTimeout).ifPresent(problem -> problems.add(
                new ConfigProblem(Keys.DATABASE_SOCKET_TIMEOUT_MS.name(), Long.toString(socketTimeout), problem)));
        String mode = valueOf(given, Keys.CAPTURE_MODE);
        String logMode = database.captureMode().configName();
        if (!mode.equals("polling") && !mode.equals(logMode)) {
            problems.add(new ConfigProblem(Keys.CAPTURE_MODE.name(), mode, mode + " does not read "
                    + database.displayName() + ", and database.url is " + database.displayName()
                    + "; allowed: polling, " + logMode));
        }
        String url = valueOf(given, Keys.DATABASE_URL);
        boolean captureActive = valueOf(given, Keys.CAPTURE_ENABLED).equals("true") && mode.equals(logMode);
        if (captureActive && given.get(Keys.CAPTURE_USERNAME.name()) == null && given.get(Keys.DATABASE_USERNAME.name()) == null
                && database.urlProperty(url, "user").filter(user -> !user.isBlank()).isEmpty()) {
            problems.add(new ConfigProblem(Keys.CAPTURE_USERNAME.name(), null,
                    "capture needs an account: set outbox.capture.connection.username, database.username, or user= in database.url"));
        }
        String wake = valueOf(given, Keys.WAKE_MODE);
        if (wake.equals("notify") && !database.notifiesInserts()) {
            String notifying = Databases.available().stream().filter(DatabaseProvider::notifiesInserts)
                    .map(DatabaseProvider::displayName).collect(Collectors.joining(", "));
            problems.add(new ConfigProblem(Keys.WAKE_MODE.name(), wake, "notify needs a database that notifies"
                    + " inserts (" + (notifying.isEmpty() ? "none in this build" : notifying) + "), and database.url is "
                    + database.displayName() + "; allowed: poll"));
        } else if (wake.equals("notify") && captureActive) {
            problems.add(new ConfigProblem(Keys.WAKE_MODE.name(), wake, "capture (outbox.capture.enabled with "
                    + logMode + ") already wakes delivery on insert; choose one: outbox.wake.mode poll, or"
                    + " outbox.capture.enabled false"));
        }
        checkConsole(given, problems);
        String broker = valueOf(given, Keys.BROKER_TYPE);
        if (!brokerNames.isEmpty() && !brokerNames.contains(broker)) {
            String suggestion = Suggestions.closest(broker, brokerNames).map(s -> "; did you mean " + s + "?").orElse("");
            problems.add(new ConfigProblem(Keys.BROKER_TYPE.name(), broker,
                    "no broker provider of that name; allowed: " + String.join(", ", new java.util.TreeSet<>(brokerNames)) + suggestion));
        }
    }

    /** Short tokens can be guessed; a console that asks for a read token must have one to compare with. */
    private static void checkConsole(Map<String, ConfigValue> given, List<ConfigProblem> problems) {
        for (ConfigKey token : List.of(Keys.CONSOLE_ADMIN_TOKEN, Keys.CONSOLE_READ_TOKEN)) {
            ConfigValue value = given.get(token.name());
            if (value != null && value.value().trim().length() < MIN_CONSOLE_TOKEN_LENGTH) {
                problems.add(new ConfigProblem(token.name(), Masking.forDisplay(token.name(), value.value()),
                        "too short: at least " + MIN_CONSOLE_TOKEN_LENGTH + " characters (for example openssl rand -hex 24)"));
            }
        }
        ConfigValue hosts = given.get(Keys.CONSOLE_ALLOWED_HOSTS.name());
        List<String> hostEntries = hosts == null ? List.of()
                : java.util.Arrays.stream(hosts.value().split(",")).map(String::trim).filter(e -> !e.isEmpty()).toList();
        for (String entry : hostEntries) {
            if (!HOST_ENTRY.matcher(entry).matches()) {
                problems.add(new ConfigProblem(Keys.CONSOLE_ALLOWED_HOSTS.name(), hosts.value(),
                        "'" + entry + "' is not a host or host:port (no scheme, path or wildcard)"));
            }
        }
        // Remote use must still name the hosts it is served under: with no list, any Host would do, which is
        // exactly what a DNS rebinding page needs.
        if (valueOf(given, Keys.CONSOLE_ENABLED).equals("true") && valueOf(given, Keys.CONSOLE_ALLOW_REMOTE).equals("true")
                && hostEntries.isEmpty()) {
            problems.add(new ConfigProblem(Keys.CONSOLE_ALLOWED_HOSTS.name(), null,
                    "required when console.allowRemote is true: the host names (or host:port) the console is reached"
                            + " under, for example console.example.com"));
        }
        if (valueOf(given, Keys.CONSOLE_ENABLED).equals("true") && valueOf(given, Keys.CONSOLE_READ_REQUIRES_TOKEN).equals("true")
                && given.get(Keys.CONSOLE_READ_TOKEN.name()) == null && given.get(Keys.CONSOLE_ADMIN_TOKEN.name()) == null) {
            problems.add(new ConfigProblem(Keys.CONSOLE_READ_TOKEN.name(), null,
                    "required when console.readRequiresToken is true (or set console.adminToken, which also reads)"));
        }
    }

    private static String valueOf(Map<String, ConfigValue> given, ConfigKey key) {
        ConfigValue value = given.get(key.name());
        return value == null ? key.defaultValue() : value.value().trim();
    }

    private static long longOf(Map<String, ConfigValue> given, ConfigKey key) {
        return Long.parseLong(valueOf(given, key));
    }
}
