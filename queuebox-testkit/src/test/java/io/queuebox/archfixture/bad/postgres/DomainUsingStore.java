package io.queuebox.archfixture.bad.postgres;

import io.queuebox.archfixture.bad.domain.SleepingRule;

public final class DomainUsingStore {
    public void claim(SleepingRule rule) throws InterruptedException {
        rule.backOff();
    }
}
