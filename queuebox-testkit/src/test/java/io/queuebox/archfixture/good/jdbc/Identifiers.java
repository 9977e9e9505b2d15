package io.queuebox.archfixture.good.jdbc;

/** Shared adapter support: used by an adapter, uses no adapter. */
public final class Identifiers {
    private Identifiers() {
    }

    public static String quoted(String identifier) {
        return '"' + identifier + '"';
    }
}
