package io.queuebox.bootstrap.http;

import io.queuebox.ports.Health;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * One component of {@code /health/ready}.
 *
 * @param name     as shown in the JSON answer, for example {@code database}
 * @param advisory whether the component is only reported: an advisory component that is down never makes
 *                 the instance unready (capture: delivery goes on through SQL without it)
 * @param check    answers the component's health now; should return within a few seconds
 */
public record HealthComponent(String name, boolean advisory, Supplier<Health> check) {
    public HealthComponent {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(check, "check");
    }

    public static HealthComponent required(String name, Supplier<Health> check) {
        return new HealthComponent(name, false, check);
    }

    public static HealthComponent advisory(String name, Supplier<Health> check) {
        return new HealthComponent(name, true, check);
    }
}
