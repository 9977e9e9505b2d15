package io.queuebox.postgres;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.TemplateEngine;

final class PostgresCaptureStateStore implements CaptureStateStore {

    private final Jdbi jdbi;
    private final String table;
    private final String selectAll;

    PostgresCaptureStateStore(Jdbi jdbi, PostgresOutboxSettings settings) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.table = settings.qualifiedCaptureStateTable();
        this.selectAll = "SELECT identity, mode, fingerprint, first_run_at, last_run_at FROM " + table;
    }

    @Override
    public List<CaptureStateRecord> findAll() {
        return jdbi.withHandle(handle -> handle.createQuery(selectAll + " ORDER BY first_run_at, identity")
                .setTemplateEngine(TemplateEngine.NOP)
                .map(PostgresCaptureStateStore::record)
                .list());
    }

    @Override
    public Optional<CaptureStateRecord> find(CaptureIdentity identity) {
        return jdbi.withHandle(handle -> handle.createQuery(selectAll + " WHERE identity = :identity")
                .setTemplateEngine(TemplateEngine.NOP)
                .bind("identity", identity.value())
                .map(PostgresCaptureStateStore::record)
                .findOne());
    }

    private static CaptureStateRecord record(ResultSet rs, StatementContext context) throws SQLException {
        return new CaptureStateRecord(new CaptureIdentity(rs.getString("identity")),
                CaptureMode.fromConfig(rs.getString("mode")), CaptureFingerprint.decode(rs.getString("fingerprint")),
                rs.getTimestamp("first_run_at").toInstant(), rs.getTimestamp("last_run_at").toInstant());
    }

    @Override
    public void recordStart(CaptureIdentity identity, CaptureMode mode, CaptureFingerprint fingerprint) {
        jdbi.useHandle(handle -> handle.createUpdate("INSERT INTO " + table
                        + " (identity, mode, fingerprint, first_run_at, last_run_at) VALUES (:identity, :mode,"
                        + " :fingerprint, now(), now()) ON CONFLICT (identity) DO UPDATE SET last_run_at = now(),"
                        + " mode = excluded.mode, fingerprint = excluded.fingerprint")
                .setTemplateEngine(TemplateEngine.NOP)
                .bind("identity", identity.value())
                .bind("mode", mode.configName())
                .bind("fingerprint", fingerprint.encode())
                .execute());
    }

    @Override
    public void recordStatus(CaptureIdentity identity, String state, String faultReason) {
        jdbi.useHandle(handle -> handle.createUpdate("UPDATE " + table
                        + " SET state = :state, fault_reason = :reason, status_at = now() WHERE identity = :identity")
                .setTemplateEngine(TemplateEngine.NOP)
                .bind("identity", identity.value())
                .bind("state", state)
                .bind("reason", faultReason == null ? null : faultReason.replace('\0', '?'))
                .execute());
    }

    @Override
    public Optional<RecordedStatus> recordedStatus(CaptureIdentity identity) {
        return jdbi.withHandle(handle -> handle.createQuery("SELECT state, fault_reason, status_at FROM " + table
                        + " WHERE identity = :identity AND state IS NOT NULL")
                .setTemplateEngine(TemplateEngine.NOP)
                .bind("identity", identity.value())
                .map((rs, ctx) -> new RecordedStatus(rs.getString("state"), rs.getString("fault_reason"),
                        rs.getTimestamp("status_at").toInstant()))
                .findOne());
    }

    @Override
    public boolean forget(CaptureIdentity identity) {
        return jdbi.withHandle(handle -> handle.createUpdate("DELETE FROM " + table + " WHERE identity = :identity")
                .setTemplateEngine(TemplateEngine.NOP)
                .bind("identity", identity.value())
                .execute()) > 0;
    }
}
