package io.queuebox.capture;

import io.queuebox.ports.CaptureSettings;
import java.util.Properties;

/** What differs between databases: the connector class, its connection keys and the topic of the outbox table. */
interface ConnectorDialect {

    /** Connector-specific properties (the common engine properties are added by the caller). */
    Properties connectorProperties(CaptureSettings settings, DebeziumCapture.Credentials credentials);

    /** The topic name Debezium gives change events of the outbox table under {@code prefix}. */
    String outboxTopic(String prefix, CaptureSettings settings);
}
