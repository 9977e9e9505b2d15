package io.queuebox.archfixture.good.kafka;

import io.queuebox.archfixture.good.ports.Port;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class Publisher {
    private static final Logger LOG = LoggerFactory.getLogger(Publisher.class);

    public void publish(Port port) {
        LOG.debug("publishing {}", port.names());
    }
}
