package io.queuebox.sqlserver;

import io.queuebox.jdbc.DatabaseLocation;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * An mssql-jdbc URL, {@code jdbc:sqlserver://[host[\instance][:port]][;property=value]...}: the server part
 * and the properties, whose names the driver compares without case.
 */
record SqlServerUrl(String host, String instance, Optional<Integer> port, List<String[]> properties) {

    static final String PREFIX = "jdbc:sqlserver://";
    static final int DEFAULT_PORT = 1433;

    static SqlServerUrl parse(String jdbcUrl) {
        if (jdbcUrl == null || !jdbcUrl.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) {
            throw bad(jdbcUrl, "it does not start with " + PREFIX);
        }
        String rest = jdbcUrl.substring(PREFIX.length());
        int semicolon = rest.indexOf(';');
        String server = semicolon < 0 ? rest : rest.substring(0, semicolon);
        List<String[]> properties = new ArrayList<>();
        if (semicolon >= 0) {
            for (String pair : properties(rest.substring(semicolon + 1))) {
                if (pair.isBlank()) {
                    continue;
                }
                int equals = pair.indexOf('=');
                if (equals <= 0) {
                    // Not the text itself: after an unbraced password it is the password's tail.
                    throw bad(jdbcUrl, "a property " + (properties.isEmpty() ? "at the start"
                            : "after '" + properties.get(properties.size() - 1)[0] + "'")
                            + " has no name=value form (a value holding ';' must be written in braces: {a;b})");
                }
                properties.add(new String[] {pair.substring(0, equals).trim(), pair.substring(equals + 1).trim()});
            }
        }
        String host = server;
        Optional<Integer> port = Optional.empty();
        int colon = server.lastIndexOf(':');
        if (colon >= 0) {
            host = server.substring(0, colon);
            port = Optional.of(port(jdbcUrl, server.substring(colon + 1)));
        }
        String instance = "";
        int backslash = host.indexOf('\\');
        if (backslash >= 0) {
            instance = host.substring(backslash + 1);
            host = host.substring(0, backslash);
        }
        SqlServerUrl url = new SqlServerUrl(host, instance, port, properties);
        if (url.host.isEmpty() && url.property("serverName").isPresent()) {
            return new SqlServerUrl(url.property("serverName").get(), instance,
                    port.or(() -> url.property("portNumber").map(p -> port(jdbcUrl, p))), properties);
        }
        return new SqlServerUrl(host, instance, port.or(() -> url.property("portNumber").map(p -> port(jdbcUrl, p))),
                properties);
    }

    /**
     * The {@code name=value} pairs of the property part, split at {@code ;} outside braces: mssql-jdbc lets a
     * value hold {@code ;} inside {@code {...}} (a closing brace doubled inside), as passwords often do.
     */
    private static List<String> properties(String text) {
        List<String> pairs = new ArrayList<>();
        StringBuilder pair = new StringBuilder();
        boolean braced = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (braced && c == '}' && i + 1 < text.length() && text.charAt(i + 1) == '}') {
                pair.append("}}");
                i++;
            } else if (c == '{' && !braced && pair.toString().endsWith("=")) {
                braced = true;
                pair.append(c);
            } else if (c == '}' && braced) {
                braced = false;
                pair.append(c);
            } else if (c == ';' && !braced) {
                pairs.add(pair.toString());
                pair.setLength(0);
            } else {
                pair.append(c);
            }
        }
        pairs.add(pair.toString());
        return pairs;
    }

    /** The value of a property, its name compared without case as the driver does. */
    Optional<String> property(String name) {
        String wanted = name.toLowerCase(Locale.ROOT);
        return properties.stream().filter(p -> p[0].toLowerCase(Locale.ROOT).equals(wanted))
                .map(p -> p[1]).reduce((first, last) -> last);
    }

    DatabaseLocation location() {
        String database = property("databaseName").or(() -> property("database")).orElse("");
        return new DatabaseLocation(host.isEmpty() ? "localhost" : host, port.orElse(DEFAULT_PORT), database);
    }

    /**
     * This URL at another host, port and database. A named instance stays on its host, and without a port of
     * its own it keeps none: the driver then asks SQL Server Browser for the instance's port (with a port it
     * would ignore the instance name).
     */
    String relocate(DatabaseLocation location) {
        StringBuilder url = new StringBuilder(PREFIX).append(location.host());
        boolean sameHost = location.host().equalsIgnoreCase(host.isEmpty() ? "localhost" : host);
        boolean instanceWithoutPort = !instance.isEmpty() && sameHost && port.isEmpty() && location.port() == DEFAULT_PORT;
        if (!instance.isEmpty() && sameHost) {
            url.append('\\').append(instance);
        }
        if (!instanceWithoutPort) {
            url.append(':').append(location.port());
        }
        for (String[] property : properties) {
            String name = property[0].toLowerCase(Locale.ROOT);
            if (!List.of("databasename", "database", "servername", "portnumber", "port").contains(name)) {
                url.append(';').append(property[0]).append('=').append(property[1]);
            }
        }
        return url.append(";databaseName=").append(location.database()).toString();
    }

    /** This URL without {@code user}, {@code userName} and {@code password}, everything else as written. */
    String withoutAccount() {
        StringBuilder url = new StringBuilder(PREFIX).append(host);
        if (!instance.isEmpty()) {
            url.append('\\').append(instance);
        }
        port.ifPresent(p -> url.append(':').append(p));
        for (String[] property : properties) {
            String name = property[0].toLowerCase(Locale.ROOT);
            if (!List.of("user", "username", "password").contains(name)) {
                url.append(';').append(property[0]).append('=').append(property[1]);
            }
        }
        return url.toString();
    }

    private static int port(String jdbcUrl, String port) {
        try {
            int value = Integer.parseInt(port.trim());
            if (value >= 1 && value <= 65_535) {
                return value;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw bad(jdbcUrl, "the port '" + port + "' is not a number from 1 to 65535");
    }

    private static IllegalArgumentException bad(String jdbcUrl, String why) {
        return new IllegalArgumentException("database.url: not a SQL Server JDBC URL (" + why
                + "); expected jdbc:sqlserver://host:1433;databaseName=name");
    }
}
