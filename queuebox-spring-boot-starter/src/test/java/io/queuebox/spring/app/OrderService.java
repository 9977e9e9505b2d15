package io.queuebox.spring.app;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.spring.TransactionalOutboxWriter;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class OrderService {

    private final JdbcTemplate jdbc;
    private final TransactionalOutboxWriter outbox;
    private final AuditService audit;

    public OrderService(JdbcTemplate jdbc, TransactionalOutboxWriter outbox, AuditService audit) {
        this.jdbc = jdbc;
        this.outbox = outbox;
        this.audit = audit;
    }

    /** The order and its event commit together. */
    @Transactional
    public OutboxEvent place(String customer) {
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO orders (id, customer) VALUES (?, ?)", id, customer);
        OutboxEvent placed = OutboxEvent.of("order", id.toString(), "OrderPlaced",
                ("{\"customer\":\"" + customer + "\"}").getBytes(StandardCharsets.UTF_8));
        outbox.enqueue(placed);
        return placed;
    }

    /** Fails after writing both: neither the order nor its event may survive. */
    @Transactional
    public void placeThenFail(String customer) {
        place(customer);
        throw new IllegalStateException("payment declined");
    }

    /**
     * Writes the order, then an audit event in a transaction of its own (REQUIRES_NEW, which commits), then fails:
     * the order and its event roll back, the audit event stays. Answers the audit event through {@code audited}.
     */
    @Transactional
    public void placeAuditedThenFail(String customer, java.util.function.Consumer<OutboxEvent> audited) {
        place(customer);
        audited.accept(audit.record(customer));
        throw new IllegalStateException("payment declined");
    }

    /** No transaction: the writer must refuse. */
    public void placeWithoutTransaction(String customer) {
        outbox.enqueue(OutboxEvent.of("order", customer, "OrderPlaced", new byte[0]));
    }
}
