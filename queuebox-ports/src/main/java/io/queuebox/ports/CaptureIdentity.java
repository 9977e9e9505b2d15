package io.queuebox.ports;

import java.util.UUID;

/** The identifier that ties a state directory to its row in {@code queuebox_capture_state}. */
public record CaptureIdentity(String value) {
    public CaptureIdentity {
        if (value == null || !value.matches("[A-Za-z0-9_.-]{1,64}")) {
            throw new IllegalArgumentException(
                    "capture identity must be 1-64 characters of letters, digits, '_', '.', '-', got: " + value);
        }
    }

    public static CaptureIdentity random() {
        return new CaptureIdentity(UUID.randomUUID().toString());
    }

    @Override
    public String toString() {
        return value;
    }
}
