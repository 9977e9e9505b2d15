package io.queuebox.archfixture.bad.bootstrap;

public final class Main {
    public static String settings() {
        return System.getenv("QUEUEBOX_CONFIG");
    }
}
