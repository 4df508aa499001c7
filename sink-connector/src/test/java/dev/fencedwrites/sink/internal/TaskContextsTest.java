package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

class TaskContextsTest {
    /** Connect 3.5's SinkRecord, as far as the check sees it: no originalTopic(). */
    static final class SinkRecordBeforeKip793 {
        public String topic() {
            return "t";
        }
    }

    @Test
    void aRuntimeWithoutOriginalTopicIsRefusedAtStartNamingTheOldestSupportedAndTheWorkersVersion() {
        assertThatThrownBy(() -> TaskContexts.requireSupportedRuntime(SinkRecordBeforeKip793.class, "3.5.2"))
                .isInstanceOf(ConnectException.class)
                .hasMessage("the fenced JDBC sink needs Kafka Connect 3.6 or later (SinkRecord.originalTopic(), KIP-793);"
                        + " this worker runs Kafka 3.5.2");
    }

    @Test
    void thisBuildsRuntimeIsAccepted() {
        assertThatCode(() -> TaskContexts.requireSupportedRuntime(SinkRecord.class, "4.3.1")).doesNotThrowAnyException();
        assertThatCode(TaskContexts::requireSupportedRuntime).doesNotThrowAnyException();
    }
}
