package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.junit.jupiter.api.Test;

/** Which database errors the sink retries: with max.retries=-1 (the default) a permanent one must never be among them. */
class SqlErrorsTest {
    /**
     * HikariCP reports a pool timeout as SQLTransientConnectionException with its cause's SQLState: a wrong password (28P01)
     * or a dropped database (3D000) is not transient, a refused connection (08001) is.
     */
    @Test
    void aPermanentCauseInsideATransientWrapperIsNotRetried() {
        assertThat(SqlErrors.isTransient(new SQLTransientConnectionException("pool timeout", "28P01"))).isFalse();
        assertThat(SqlErrors.isTransient(new SQLTransientConnectionException("pool timeout", "3D000"))).isFalse();
        assertThat(SqlErrors.isTransient(new SQLTransientConnectionException("pool timeout", "42501"))).isFalse();
        assertThat(SqlErrors.isTransient(new SQLTransientConnectionException("pool timeout", "08001"))).isTrue();
        assertThat(SqlErrors.isTransient(new SQLTransientConnectionException("pool timeout"))).isTrue();
        assertThat(SqlErrors.isTransient(new SQLException("deadlock", "40P01"))).isTrue();
    }
}
