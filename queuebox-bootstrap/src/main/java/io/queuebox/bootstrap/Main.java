package io.queuebox.bootstrap;

public final class Main {
    public static void main(String[] args) {
    }
}
