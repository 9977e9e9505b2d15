package io.queuebox.bootstrap.internal;

import io.queuebox.bootstrap.config.Masking;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Waits for the database at start: retries with backoff (250 ms doubling to 5 s) until the deadline. */
public final class DatabaseWait {

    private static final Logger LOG = LoggerFactory.getLogger(DatabaseWait.class);
    private static final Duration FIRST_DELAY = Duration.ofMillis(250);
    private static final Duration MAX_DELAY = Duration.ofSeconds(5);

    private DatabaseWait() {
    }

    /**
     * Returns once a connection is valid.
     *
     * @throws DatabaseUnreachableException when none was within {@code deadline}
     */
    public static void await(DataSource dataSource, String displayUrl, Duration deadline) {
        long start = System.nanoTime();
        Duration delay = FIRST_DELAY;
        int attempt = 0;
        while (true) {
            attempt++;
            try (Connection connection = dataSource.getConnection()) {
                if (connection.isValid(5)) {
                    if (attempt > 1) {
                        LOG.info("database {} answered after {} attempts", Masking.maskUrl(displayUrl), attempt);
                    }
                    return;
                }
            } catch (SQLException e) {
                Duration waited = Duration.ofNanos(System.nanoTime() - start);
                if (waited.plus(delay).compareTo(deadline) > 0) {
                    throw new DatabaseUnreachableException(Masking.maskUrl(displayUrl) + " did not answer within "
                            + deadline.toMillis() + " ms (startup.databaseWaitMs), " + attempt + " attempts; last error: "
                            + Masking.maskUrl(e.getMessage()), e);
                }
                LOG.warn("database {} not reachable yet (attempt {}): {}; retrying in {} ms",
                        Masking.maskUrl(displayUrl), attempt, Masking.maskUrl(e.getMessage()), delay.toMillis());
            }
            sleep(delay);
            delay = delay.multipliedBy(2).compareTo(MAX_DELAY) > 0 ? MAX_DELAY : delay.multipliedBy(2);
        }
    }

    private static void sleep(Duration delay) {
        try {
            Thread.sleep(delay.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DatabaseUnreachableException("interrupted while waiting for the database", e);
        }
    }
}
