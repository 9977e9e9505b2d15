/**
 * The rules of QueueBox as code: which rows may be claimed, how leases, retries and parking work, how
 * the outcomes of one batch are recorded, when the engine wakes, the delivery engine itself, and the
 * capture-state reconciliation decision.
 *
 * <p>Depends on {@code io.queuebox.ports} and the JDK only. Time comes in through {@link java.time.Clock};
 * what the engine has to say goes out through {@link io.queuebox.ports.DeliveryListener}.
 */
package io.queuebox.domain;
