package io.queuebox.archfixture.cycle.b;

import io.queuebox.archfixture.cycle.a.A;

public final class B {
    public A partner() {
        return null;
    }
}
