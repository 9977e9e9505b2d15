package io.queuebox.bootstrap.console;

import io.queuebox.ports.OutboxStore;
import io.queuebox.ports.ParkedEvent;
import io.queuebox.ports.ReplaySelector;
import java.nio.ByteBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.charset.CharacterCodingException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The parked events as the console lists, counts and replays them, through the same store operations as
 * {@code queuebox outbox parked|replay}: {@link OutboxStore#parked} and {@link OutboxStore#replay}. A filter the
 * store cannot express (error text, a type without an id) is applied here to the first {@value #SCAN_LIMIT} parked
 * rows in write order, and the answer says when there may be more ({@code truncated}).
 *
 * <p>A poll reads at most what it shows: rows are counted and filtered without their payloads (a capped read of
 * 0 bytes), and only the rows shown are read with a payload, {@value #PREVIEW_BYTES} bytes of it at most. The
 * rows parked for their size are exactly the large ones, and each open page polls every few seconds.
 */
final class ParkedEvents {

    /** How much of a payload the console shows: enough to recognise it, bounded so a large one cannot bloat a poll. */
    static final int PREVIEW_BYTES = 2048;
    /** The most parked rows one request reads to count or filter them (without their payloads). */
    static final int SCAN_LIMIT = 1000;
    /** A scan counts and filters rows by their columns; their payloads are not needed, so none are read. */
    private static final int NO_PAYLOAD = 0;

    private final OutboxStore store;

    ParkedEvents(OutboxStore store) {
        this.store = store;
    }

    Map<String, Object> list(ReplayRequest.Filter filter, int limit) {
        List<ParkedEvent> scanned = store.parked(filter.selector(), SCAN_LIMIT, NO_PAYLOAD);
        List<ParkedEvent> matched = scanned.stream().filter(filter::matches).toList();
        List<ParkedEvent> shown;
        if (filter.storeSelects()) {
            shown = store.parked(filter.selector(), limit, PREVIEW_BYTES);
        } else {
            Set<UUID> ids = matched.stream().limit(limit).map(p -> p.event().eventId()).collect(Collectors.toSet());
            shown = ids.isEmpty() ? List.of() : store.parked(ReplaySelector.events(ids), limit, PREVIEW_BYTES);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("events", shown.stream().map(ParkedEvents::json).toList());
        body.put("matched", matched.size());
        body.put("truncated", scanned.size() >= SCAN_LIMIT);
        return body;
    }

    Map<String, Object> dryRun(ReplayRequest request) {
        List<ParkedEvent> chosen = chosen(request);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("count", chosen.size());
        body.put("truncated", chosen.size() >= SCAN_LIMIT);
        body.put("selection", request.describe());
        body.put("changed", false);
        return body;
    }

    Map<String, Object> replay(ReplayRequest request) {
        int replayed;
        boolean truncated = false;
        if (request instanceof ReplayRequest.OneEvent one) {
            replayed = store.replay(ReplaySelector.events(Set.of(one.eventId())));
        } else if (request instanceof ReplayRequest.OneAggregate aggregate) {
            replayed = store.replay(ReplaySelector.aggregate(aggregate.aggregateType(), aggregate.aggregateId()));
        } else {
            ReplayRequest.Filter filter = ((ReplayRequest.Matching) request).filter();
            if (filter.storeSelects()) {
                replayed = store.replay(filter.selector());
            } else {
                List<ParkedEvent> scanned = store.parked(filter.selector(), SCAN_LIMIT, NO_PAYLOAD);
                truncated = scanned.size() >= SCAN_LIMIT;
                Set<UUID> ids = scanned.stream().filter(filter::matches).map(p -> p.event().eventId())
                        .collect(Collectors.toSet());
                replayed = ids.isEmpty() ? 0 : store.replay(ReplaySelector.events(ids));
            }
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("replayed", replayed);
        body.put("truncated", truncated);
        body.put("selection", request.describe());
        return body;
    }

    /** The rows a replay would take, without their payloads: only counted. */
    private List<ParkedEvent> chosen(ReplayRequest request) {
        if (request instanceof ReplayRequest.OneEvent one) {
            return store.parked(ReplaySelector.events(Set.of(one.eventId())), 1, NO_PAYLOAD);
        }
        if (request instanceof ReplayRequest.OneAggregate aggregate) {
            return store.parked(ReplaySelector.aggregate(aggregate.aggregateType(), aggregate.aggregateId()), SCAN_LIMIT,
                    NO_PAYLOAD);
        }
        ReplayRequest.Filter filter = ((ReplayRequest.Matching) request).filter();
        return store.parked(filter.selector(), SCAN_LIMIT, NO_PAYLOAD).stream().filter(filter::matches).toList();
    }

    private static Map<String, Object> json(ParkedEvent parked) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("eventId", parked.event().eventId().toString());
        json.put("sequence", parked.sequence());
        json.put("aggregateType", parked.event().aggregateType());
        json.put("aggregateId", parked.event().aggregateId());
        json.put("eventType", parked.event().eventType());
        json.put("attempts", parked.attempts());
        json.put("lastError", parked.lastError());
        json.put("createdAt", parked.createdAt().toString());
        json.put("contentType", parked.event().contentType());
        byte[] payload = parked.event().payload();
        json.put("payloadBytes", parked.payloadBytes());
        json.put("payloadPreview", preview(payload));
        json.put("payloadTruncated", parked.payloadBytes() > PREVIEW_BYTES);
        return json;
    }

    /** The first {@value #PREVIEW_BYTES} bytes as text; a binary payload shows as replacement characters. */
    static String preview(byte[] payload) {
        int length = Math.min(payload.length, PREVIEW_BYTES);
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPLACE).onUnmappableCharacter(CodingErrorAction.REPLACE);
        try {
            return decoder.decode(ByteBuffer.wrap(payload, 0, length)).toString();
        } catch (CharacterCodingException e) {
            return "(not text)";
        }
    }
}
