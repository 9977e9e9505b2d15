/**
 * Change data capture for QueueBox: Debezium embedded in the process, wrapped as a
 * {@link io.queuebox.ports.CaptureConnector} that only wakes delivery, and the file-backed state
 * directory ({@code offsets.dat}, {@code history.dat}, {@code identity}).
 */
package io.queuebox.capture;
