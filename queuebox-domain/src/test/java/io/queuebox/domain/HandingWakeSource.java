package io.queuebox.domain;

import io.queuebox.ports.Health;
import io.queuebox.ports.WakeSource;
import java.util.concurrent.atomic.AtomicReference;

/** A wake source that hands the engine's listener to the test, as the capture supervisor gets it. */
final class HandingWakeSource implements WakeSource {

    final AtomicReference<WakeListener> listener = new AtomicReference<>();

    @Override
    public void start(WakeListener delivery) {
        listener.set(delivery);
    }

    @Override
    public Health health() {
        return Health.up("handing");
    }

    @Override
    public void close() {
    }
}
