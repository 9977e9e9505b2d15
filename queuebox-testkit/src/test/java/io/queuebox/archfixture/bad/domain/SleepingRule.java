package io.queuebox.archfixture.bad.domain;

public final class SleepingRule {
    public void backOff() throws InterruptedException {
        Thread.sleep(100);
    }
}
