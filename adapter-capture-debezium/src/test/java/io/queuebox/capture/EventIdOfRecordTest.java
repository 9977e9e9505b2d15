package io.queuebox.capture;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

/** The row a change event names, read from its {@code after} image as Debezium hands it over. */
class EventIdOfRecordTest {

    private static final Schema ROW = SchemaBuilder.struct().field("event_id", Schema.STRING_SCHEMA)
            .field("aggregate_id", Schema.STRING_SCHEMA).build();
    private static final Schema ROW_WITHOUT_ID = SchemaBuilder.struct().field("aggregate_id", Schema.STRING_SCHEMA)
            .build();

    private static SourceRecord insertOf(Schema rowSchema, Struct row) {
        Schema envelope = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA)
                .field("after", optional(rowSchema))
                .build();
        Struct value = new Struct(envelope).put("op", "c").put("after", row == null ? null : copy(row, envelope));
        return new SourceRecord(null, null, "outbox", envelope, value);
    }

    private static Schema optional(Schema rowSchema) {
        SchemaBuilder builder = SchemaBuilder.struct().optional();
        rowSchema.fields().forEach(field -> builder.field(field.name(), field.schema()));
        return builder.build();
    }

    private static Struct copy(Struct row, Schema envelope) {
        Struct after = new Struct(envelope.field("after").schema());
        row.schema().fields().forEach(field -> after.put(field.name(), row.get(field)));
        return after;
    }

    @Test
    void anInsertNamesItsEventId() {
        UUID id = UUID.randomUUID();
        Struct row = new Struct(ROW).put("event_id", id.toString()).put("aggregate_id", "order-1");

        assertThat(DebeziumCaptureConnector.eventIdOf(insertOf(ROW, row))).isEqualTo(id);
    }

    @Test
    void aSqlServerUniqueidentifierInUpperCaseIsReadToo() {
        UUID id = UUID.randomUUID();
        Struct row = new Struct(ROW).put("event_id", id.toString().toUpperCase()).put("aggregate_id", "order-1");

        assertThat(DebeziumCaptureConnector.eventIdOf(insertOf(ROW, row))).isEqualTo(id);
    }

    @Test
    void aRecordWithoutAReadableIdNamesNoRow() {
        Struct unreadable = new Struct(ROW).put("event_id", "not-a-uuid").put("aggregate_id", "order-1");
        Struct withoutId = new Struct(ROW_WITHOUT_ID).put("aggregate_id", "order-1");

        assertThat(DebeziumCaptureConnector.eventIdOf(insertOf(ROW, unreadable))).isNull();
        assertThat(DebeziumCaptureConnector.eventIdOf(insertOf(ROW_WITHOUT_ID, withoutId))).isNull();
        assertThat(DebeziumCaptureConnector.eventIdOf(insertOf(ROW, null))).isNull();
        assertThat(DebeziumCaptureConnector.eventIdOf(new SourceRecord(null, null, "outbox", null, null))).isNull();
    }
}
