package io.queuebox.bootstrap.console;

import io.queuebox.domain.CaptureStatus;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What the relay knows about capture at one moment, for the console's capture view: the same facts
 * {@code queuebox capture status} prints and the capture gauges show, read from the running relay (the console
 * never tries the lock, which the CLI does to name the owner).
 *
 * @param mode             {@code outbox.capture.mode}
 * @param enabled          {@code outbox.capture.enabled}
 * @param status           the supervisor's status; empty when capture does not run in this relay
 * @param owner            who holds the capture identity, in words
 * @param lastEventAt      when capture last saw an insert
 * @param slot             the replication slot; empty on databases without one
 * @param retainedWalBytes what the slot holds back, as last sampled
 * @param warnBytes        {@code outbox.capture.retainedWalWarnBytes}
 */
public record CaptureFacts(String mode, boolean enabled, Optional<CaptureStatus> status, String owner,
                           Optional<Instant> lastEventAt, String slot, OptionalLong retainedWalBytes,
                           OptionalLong warnBytes) {
}
