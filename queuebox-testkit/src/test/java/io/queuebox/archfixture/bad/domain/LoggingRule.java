package io.queuebox.archfixture.bad.domain;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class LoggingRule {
    private static final Logger LOG = LoggerFactory.getLogger(LoggingRule.class);

    public void decide() {
        LOG.info("decided");
    }
}
