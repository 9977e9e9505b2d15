package io.queuebox.bootstrap.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
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

    /** @param given the values given by file and environment, without defaults, secrets already resolved */
    List<ConfigProblem> validate(Map<String, ConfigValue> given) {
        List<ConfigProblem> problems = new ArrayList<>();
        Collection<String> known = Keys.all().stream().map(ConfigKey::name).collect(Collectors.toList());
        given.forEach((name, value) -> {
            ConfigKey key = Keys.find(name).orElse(null);
            if (key != null) {
                checkValue(key, value.value()).ifPresent(problem ->
                        problems.add(new ConfigProblem(name, Masking.forDisplay(name, value.value()), problem)));
            } else if (!Keys.isBrokerSetting(name)) {
                String suggestion = Suggestions.closest(name, known).map(s -> "; did you mean " + s + "?").orElse("");
                problems.add(new ConfigProblem(name, Masking.forDisplay(name, value.value()),
                        "unknown key (from " + value.origin() + ")" + suggestion));
            }
        });
        for (ConfigKey key : Keys.all()) {
            if (key.required() && (!given.containsKey(key.name()) || given.get(key.name()).value().isBlank())) {
                problems.add(new ConfigProblem(key.name(), null, "required: " + key.allowedDescription()
                        + " (or set " + key.envName() + ")"));
            }
        }
        if (problems.isEmpty()) {
            crossCheck(given, problems);
        }
        return problems;
    }

    private java.util.Optional<String> checkValue(ConfigKey key, String value) {
        String v = value.trim();
        String allowed = "allowed: " + key.allowedDescription();
        return java.util.Optional.ofNullable(switch (key.type()) {
            case STRING, PATH -> v.isEmpty() ? "must not be empty" : null;
            case BOOLEAN -> v.equals("true") || v.equals("false") ? null : "not a boolean; " + allowed;
            case CHOICE -> key.allowed().contains(v) ? null : "not an allowed value; " + allowed;
            case IDENTIFIER -> IDENTIFIER.matcher(v).matches() ? null : "not a valid identifier; " + allowed;
            case JDBC_URL -> v.startsWith("jdbc:postgresql://") ? null
                    : "not a PostgreSQL JDBC URL (this build bundles the PostgreSQL store); " + allowed;
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

    private void crossCheck(Map<String, ConfigValue> given, List<ConfigProblem> problems) {
        long initial = longOf(given, Keys.RETRY_INITIAL_MS);
        long max = longOf(given, Keys.RETRY_MAX_MS);
        if (max < initial) {
            problems.add(new ConfigProblem(Keys.RETRY_MAX_MS.name(), Long.toString(max),
                    "must be at least outbox.retry.initialMs (" + initial + ")"));
        }
        long workers = longOf(given, Keys.OUTBOX_WORKERS);
        long pool = longOf(given, Keys.DATABASE_POOL_MAX_SIZE);
        if (pool < workers + 1) {
            problems.add(new ConfigProblem(Keys.DATABASE_POOL_MAX_SIZE.name(), Long.toString(pool),
                    "must be at least outbox.workers + 1 (" + (workers + 1) + "): every worker records outcomes while the loop claims"));
        }
        String table = valueOf(given, Keys.OUTBOX_TABLE);
        if (table.length() > 48) {
            problems.add(new ConfigProblem(Keys.OUTBOX_TABLE.name(), table,
                    "longer than 48 characters; its index names (table name plus a suffix) must fit PostgreSQL's 63"));
        }
        String mode = valueOf(given, Keys.CAPTURE_MODE);
        if (mode.equals("sqlserver-cdc")) {
            problems.add(new ConfigProblem(Keys.CAPTURE_MODE.name(), mode,
                    "sqlserver-cdc needs a SQL Server database, but database.url is PostgreSQL; allowed here: polling, postgres-logical"));
        }
        boolean captureActive = valueOf(given, Keys.CAPTURE_ENABLED).equals("true") && mode.equals("postgres-logical");
        if (captureActive && given.get(Keys.CAPTURE_USERNAME.name()) == null && given.get(Keys.DATABASE_USERNAME.name()) == null
                && !valueOf(given, Keys.DATABASE_URL).matches(".*[?&]user=[^&]+.*")) {
            problems.add(new ConfigProblem(Keys.CAPTURE_USERNAME.name(), null,
                    "capture needs an account: set outbox.capture.connection.username, database.username, or user= in database.url"));
        }
        String broker = valueOf(given, Keys.BROKER_TYPE);
        if (!brokerNames.isEmpty() && !brokerNames.contains(broker)) {
            String suggestion = Suggestions.closest(broker, brokerNames).map(s -> "; did you mean " + s + "?").orElse("");
            problems.add(new ConfigProblem(Keys.BROKER_TYPE.name(), broker,
                    "no broker provider of that name; allowed: " + String.join(", ", new java.util.TreeSet<>(brokerNames)) + suggestion));
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
