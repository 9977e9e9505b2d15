package io.queuebox.archfixture.bad.kafka;

public class Publisher {
    public void publish() {
    }
}
