package io.queuebox.bootstrap.logs;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Marker;

/**
 * Moves the client libraries' own warnings about a lost connection down to DEBUG. The pool warns once per
 * broken connection with a full stack trace (75 lines for one PostgreSQL restart), the AMQP client warns per
 * connection and thread; {@link DeliveryLog} already tells the same outage as one "down" and one
 * "recovered" line. Their other warnings (a leak, a clock leap, a refused login) stay as they are.
 */
public final class ExpectedFaultFilter extends TurboFilter {

    // Message templates (the format, before arguments; Kafka prefixes its client id) that only ever report a lost
    // or refused connection.
    private static final List<String> CONNECTION_LOST = List.of(
            "{} - Failed to validate connection",                    // HikariCP PoolBase: a connection the server closed
            "An unexpected connection driver error occurred",        // amqp-client: socket closed or reset
            "Connection to node {} ({}) could not be established");  // kafka-clients NetworkClient: broker unreachable

    @Override
    public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
        if (level == null || !level.isGreaterOrEqual(Level.WARN) || format == null
                || logger.getName().startsWith("io.queuebox")) {
            return FilterReply.NEUTRAL;
        }
        Throwable error = t != null ? t : lastThrowable(params);
        boolean expected = CONNECTION_LOST.stream().anyMatch(format::contains)
                || (error != null && logger.getName().startsWith("com.zaxxer.hikari") && ShortCause.isConnectionFault(error));
        if (!expected) {
            return FilterReply.NEUTRAL;
        }
        // Logged again at DEBUG, where this filter lets it through: nothing is lost for whoever debugs.
        if (logger.isDebugEnabled()) {
            Object[] arguments = params == null ? new Object[0] : params;
            if (t != null) {
                arguments = Arrays.copyOf(arguments, arguments.length + 1);
                arguments[arguments.length - 1] = t;
            }
            logger.debug(marker, format, arguments);
        }
        return FilterReply.DENY;
    }

    private static Throwable lastThrowable(Object[] params) {
        return params != null && params.length > 0 && params[params.length - 1] instanceof Throwable error ? error : null;
    }
}
