package io.queuebox.bootstrap.console;

import io.queuebox.domain.CaptureStatus;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/** The capture view's JSON: the facts, the fault in words and the recovery step of the how-to. */
final class CaptureView {

    private final Supplier<CaptureFacts> facts;

    CaptureView(Supplier<CaptureFacts> facts) {
        this.facts = facts;
    }

    Map<String, Object> json() {
        CaptureFacts now = facts.get();
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("mode", now.mode());
        json.put("enabled", now.enabled());
        json.put("state", now.status().map(s -> s.state().name()).orElse(CaptureStatus.State.DISABLED.name()));
        json.put("healthy", now.status().map(CaptureStatus::healthy).orElse(true));
        json.put("message", now.status().map(CaptureStatus::message)
                .orElse("capture does not run in this relay; delivery polls the table"));
        json.put("identity", now.status().flatMap(CaptureStatus::identity).map(Object::toString).orElse(null));
        now.status().flatMap(CaptureStatus::fault).ifPresentOrElse(fault -> {
            CaptureRecovery.Advice advice = CaptureRecovery.of(fault);
            json.put("fault", fault.name());
            json.put("faultInWords", advice.whatHappened());
            json.put("recovery", advice.recovery());
            json.put("howTo", CaptureRecovery.HOW_TO);
        }, () -> json.put("fault", null));
        json.put("owner", now.owner());
        json.put("lastEventAgeMs", now.lastEventAt().map(at -> Math.max(0, Duration.between(at, Instant.now()).toMillis()))
                .orElse(null));
        json.put("slot", now.slot().isEmpty() ? null : now.slot());
        json.put("retainedWalBytes", now.retainedWalBytes().isPresent() ? now.retainedWalBytes().getAsLong() : null);
        json.put("retainedWalWarnBytes", now.warnBytes().isPresent() ? now.warnBytes().getAsLong() : null);
        json.put("retainedWalOverThreshold", now.retainedWalBytes().isPresent() && now.warnBytes().isPresent()
                && now.retainedWalBytes().getAsLong() >= now.warnBytes().getAsLong());
        return json;
    }
}
