package io.queuebox.bootstrap.console;

import io.queuebox.embed.config.Keys;
import io.queuebox.embed.config.QueueBoxConfig;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The {@code console.*} keys. The tokens never leave this record except to be compared, and its
 * {@link #toString()} hides them, so a debug line that prints the settings cannot leak one.
 *
 * @param enabled           {@code console.enabled}
 * @param allowRemote       {@code console.allowRemote}
 * @param adminToken        {@code console.adminToken}; empty makes the console read-only
 * @param readRequiresToken {@code console.readRequiresToken}
 * @param readToken         {@code console.readToken}
 * @param sampleInterval    {@code console.sampleIntervalMs}
 * @param allowedHosts      {@code console.allowedHosts}: the names (host or host:port) the console is served under
 *                          besides the loopback ones
 */
public record ConsoleSettings(boolean enabled, boolean allowRemote, Optional<String> adminToken,
                              boolean readRequiresToken, Optional<String> readToken, Duration sampleInterval,
                              List<String> allowedHosts) {

    public ConsoleSettings {
        allowedHosts = List.copyOf(allowedHosts);
    }

    /** Served under the loopback names only (no {@code console.allowedHosts}). */
    public ConsoleSettings(boolean enabled, boolean allowRemote, Optional<String> adminToken,
                           boolean readRequiresToken, Optional<String> readToken, Duration sampleInterval) {
        this(enabled, allowRemote, adminToken, readRequiresToken, readToken, sampleInterval, List.of());
    }

    public static ConsoleSettings from(QueueBoxConfig config) {
        return new ConsoleSettings(config.bool(Keys.CONSOLE_ENABLED), config.bool(Keys.CONSOLE_ALLOW_REMOTE),
                config.optional(Keys.CONSOLE_ADMIN_TOKEN).filter(token -> !token.isBlank()),
                config.bool(Keys.CONSOLE_READ_REQUIRES_TOKEN),
                config.optional(Keys.CONSOLE_READ_TOKEN).filter(token -> !token.isBlank()),
                config.millis(Keys.CONSOLE_SAMPLE_INTERVAL_MS),
                config.optional(Keys.CONSOLE_ALLOWED_HOSTS).map(ConsoleSettings::entries).orElse(List.of()));
    }

    /** The comma-separated entries, each trimmed (list syntax, not part of a name). */
    static List<String> entries(String list) {
        return Arrays.stream(list.split(",")).map(String::trim).filter(entry -> !entry.isEmpty()).toList();
    }

    /** Whether changes (replay) can be made at all: only with an admin token configured. */
    public boolean replayEnabled() {
        return adminToken.isPresent();
    }

    @Override
    public String toString() {
        return "ConsoleSettings[enabled=" + enabled + ", allowRemote=" + allowRemote + ", adminToken="
                + (adminToken.isPresent() ? "****" : "unset") + ", readRequiresToken=" + readRequiresToken
                + ", readToken=" + (readToken.isPresent() ? "****" : "unset") + ", sampleInterval=" + sampleInterval + ", allowedHosts=" + allowedHosts + "]";
    }
}
