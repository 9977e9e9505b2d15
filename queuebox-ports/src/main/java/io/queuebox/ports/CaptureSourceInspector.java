package io.queuebox.ports;

/** Asks the database whether capture can run: checked before the connector starts, and for metrics. */
public interface CaptureSourceInspector {

    /**
     * Inspects the source for these settings. Never throws for a missing object: that is a problem in the
     * report. Throws only when the database cannot be reached.
     */
    CaptureSourceReport inspect(CaptureSettings settings);
}
