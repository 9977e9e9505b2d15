package io.queuebox.archfixture.bad.ports;

import io.queuebox.archfixture.bad.domain.SleepingRule;

public interface PortUsingTheDomain {
    SleepingRule rule();
}
