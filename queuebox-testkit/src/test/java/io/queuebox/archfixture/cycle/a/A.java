package io.queuebox.archfixture.cycle.a;

import io.queuebox.archfixture.cycle.b.B;

public final class A {
    public B partner() {
        return new B();
    }
}
