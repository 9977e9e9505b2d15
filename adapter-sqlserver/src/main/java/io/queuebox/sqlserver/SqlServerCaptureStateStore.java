package io.queuebox.sqlserver;

import io.queuebox.ports.CaptureFingerprint;
import io.queuebox.ports.CaptureIdentity;
import io.queuebox.ports.CaptureMode;
import io.queuebox.ports.CaptureStateRecord;
import io.queuebox.ports.CaptureStateStore;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.StatementContext;

final class SqlServerCaptureStateStore implements CaptureStateStore {

    private final Jdbi jdbi;
    private final SqlServerOutboxSettings settings;

    SqlServerCaptureStateStore(Jdbi jdbi, SqlServerOutboxSettings settings) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi");
        this.settings = Objects.requireNonNull(settings, "settings");
    }

    @Override
    public List<CaptureStateRecord> findAll() {
        SqlCall call = call(SqlServerStatements.CAPTURE_STATE_FIND_ALL, Map.of());
        return jdbi.withHandle(handle -> SqlServerOutboxStore.bind(SqlServerOutboxStore.plain(
                handle.createQuery(call.sql())), call).map(SqlServerCaptureStateStore::record).list());
    }

    @Override
    public Optional<CaptureStateRecord> find(CaptureIdentity identity) {
        SqlCall call = call(SqlServerStatements.CAPTURE_STATE_FIND, Map.of("identity", identity.value()));
        return jdbi.withHandle(handle -> SqlServerOutboxStore.bind(SqlServerOutboxStore.plain(
                handle.createQuery(call.sql())), call).map(SqlServerCaptureStateStore::record).findOne());
    }

    @Override
    public void recordStart(CaptureIdentity identity, CaptureMode mode, CaptureFingerprint fingerprint) {
        update(call(SqlServerStatements.CAPTURE_STATE_RECORD_START, Map.of("identity", identity.value(),
                "mode", mode.configName(), "fingerprint", fingerprint.encode())));
    }

    @Override
    public void recordStatus(CaptureIdentity identity, String state, String faultReason) {
        Map<String, Object> parameters = new HashMap<>();
        parameters.put("identity", identity.value());
        parameters.put("state", state);
        parameters.put("reason", faultReason);
        update(call(SqlServerStatements.CAPTURE_STATE_RECORD_STATUS, parameters));
    }

    @Override
    public boolean forget(CaptureIdentity identity) {
        return update(call(SqlServerStatements.CAPTURE_STATE_FORGET, Map.of("identity", identity.value()))) > 0;
    }

    SqlCall call(SqlServerStatements statement, Map<String, Object> parameters) {
        return new SqlCall(statement, statement.render(settings), parameters);
    }

    private int update(SqlCall call) {
        return jdbi.withHandle(handle -> SqlServerOutboxStore.bind(SqlServerOutboxStore.plain(
                handle.createUpdate(call.sql())), call).execute());
    }

    private static CaptureStateRecord record(ResultSet rs, StatementContext context) throws SQLException {
        return new CaptureStateRecord(new CaptureIdentity(rs.getString("identity")),
                CaptureMode.fromConfig(rs.getString("mode")), CaptureFingerprint.decode(rs.getString("fingerprint")),
                SqlServerOutboxStore.instant(rs, "first_run_at"), SqlServerOutboxStore.instant(rs, "last_run_at"));
    }
}
