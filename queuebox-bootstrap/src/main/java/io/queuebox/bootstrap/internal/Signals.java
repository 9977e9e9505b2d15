package io.queuebox.bootstrap.internal;

import java.util.concurrent.CountDownLatch;

/**
 * Turns SIGTERM and SIGINT into a request to stop, handled by the main thread, so that the process can
 * shut down in order and exit with 0 (the JVM's default handling exits with 143 or 130). sun.misc.Signal
 * (module jdk.unsupported) is the only JDK way to handle a signal; the compiler warns about it by design.
 */
public final class Signals {

    private Signals() {
    }

    /** Counts {@code stop} down on SIGTERM or SIGINT. Falls back to a shutdown hook where signals cannot be handled. */
    public static void onTermination(CountDownLatch stop, Runnable fallbackHook) {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> stop.countDown());
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), signal -> stop.countDown());
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
            Runtime.getRuntime().addShutdownHook(new Thread(fallbackHook, "queuebox-shutdown"));
        }
    }
}
