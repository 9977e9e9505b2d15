package io.queuebox.spring.app;

import io.queuebox.ports.OutboxEvent;
import io.queuebox.spring.TransactionalOutboxWriter;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/** Writes in a transaction of its own, whatever the caller's: it commits even when the caller rolls back. */
@Service
public class AuditService {

    private final TransactionalOutboxWriter outbox;

    public AuditService(TransactionalOutboxWriter outbox) {
        this.outbox = outbox;
    }

    @Transactional(propagation = Propagation.REQUIRES_NEW)
    public OutboxEvent record(String customer) {
        OutboxEvent audited = OutboxEvent.of("audit", customer, "OrderAttempted", new byte[0]);
        outbox.enqueue(audited);
        return audited;
    }
}
