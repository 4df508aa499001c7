package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.TokenVerifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/**
 * Which polled records the main consumer's interceptor reads ahead for, and how it joins the interceptors a user already
 * gave the main consumer. That Kafka Streams calls it and that the answers decide the same is proven with real services
 * (TokenReadAheadIT, TokenVerificationIT).
 */
class TokenReadAheadTest {
    private static final TopicPartition INPUT = new TopicPartition("fence.input", 0);

    /** A verifier that records what it was asked to read ahead. */
    private static class Recording implements TokenVerifier {
        final List<String> asked = new ArrayList<>();

        @Override
        public Verdict verify(byte[] key, long token, long leaseId) {
            throw new AssertionError("the interceptor only reads ahead");
        }

        @Override
        public void readAhead(List<Question> questions) {
            questions.forEach(q -> asked.add(new String(q.key(), StandardCharsets.UTF_8) + "@" + q.token() + "/" + q.leaseId()));
        }

        @Override
        public void close() {
        }
    }

    @Test
    void readsAheadForEveryRecordWithAKeyAPositiveTokenAndAPositiveLeaseAndLeavesTheRestToTheDecision() {
        Recording verifier = new Recording();
        TokenReadAhead interceptor = new TokenReadAhead();
        interceptor.configure(Map.of(TokenReadAhead.VERIFIER_CONFIG, verifier));
        List<ConsumerRecord<byte[], byte[]>> polled = List.of(
                record("a", "7", "11"),
                record("b", "8", null),
                record("c", null, "11"),
                record("d", "x9", "11"),
                record("e", "9", "-11"),
                record("f", "0", "11"),
                record("", "10", "11"),
                record(null, "10", "11"),
                record("g", "99999999999999999999", "11"),
                record("h", "12", "13"));
        ConsumerRecords<byte[], byte[]> records = new ConsumerRecords<>(Map.of(INPUT, polled), Map.of());

        assertThat(interceptor.onConsume(records)).isSameAs(records);
        assertThat(verifier.asked).containsExactly("a@7/11", "h@12/13");
    }

    @Test
    void aTokenTheVerifierAnswersLocallyIsNotReadAhead() {
        Recording verifier = new Recording() {
            @Override
            public boolean answersLocally(byte[] key, long token) {
                return token >= 10; // an index from revision 10 on
            }
        };
        TokenReadAhead interceptor = new TokenReadAhead();
        interceptor.configure(Map.of(TokenReadAhead.VERIFIER_CONFIG, verifier));
        List<ConsumerRecord<byte[], byte[]>> polled = List.of(record("a", "7", "11"), record("b", "10", "11"),
                record("c", "12", null), record("d", "9", "11"));

        interceptor.onConsume(new ConsumerRecords<>(Map.of(INPUT, polled), Map.of()));

        assertThat(verifier.asked).containsExactly("a@7/11", "d@9/11");
    }

    @Test
    void withoutAVerifierItPassesRecordsThrough() {
        TokenReadAhead interceptor = new TokenReadAhead();
        interceptor.configure(Map.of());
        ConsumerRecords<byte[], byte[]> records = new ConsumerRecords<>(Map.of(INPUT, List.of(record("a", "7", "11"))),
                Map.of());

        assertThat(interceptor.onConsume(records)).isSameAs(records);
    }

    @Test
    void isInstalledAfterTheMainConsumersOwnInterceptorsInKafkaStreamsPrecedence() {
        String ours = TokenReadAhead.class.getName();
        String key = StreamsConfig.mainConsumerPrefix("interceptor.classes");
        Recording verifier = new Recording();

        Properties none = new Properties();
        TokenReadAhead.install(none, verifier);
        assertThat(none.get(key)).isEqualTo(ours);
        assertThat(none.get(StreamsConfig.mainConsumerPrefix(TokenReadAhead.VERIFIER_CONFIG))).isSameAs(verifier);

        Properties plain = new Properties();
        plain.put("interceptor.classes", "com.example.A, com.example.B");
        TokenReadAhead.install(plain, verifier);
        assertThat(plain.get(key)).isEqualTo("com.example.A,com.example.B," + ours);

        Properties consumer = new Properties();
        consumer.put("interceptor.classes", "com.example.A");
        consumer.put(StreamsConfig.consumerPrefix("interceptor.classes"), List.of(String.class, "com.example.C"));
        TokenReadAhead.install(consumer, verifier);
        assertThat(consumer.get(key)).isEqualTo("java.lang.String,com.example.C," + ours);

        Properties main = new Properties();
        main.put(StreamsConfig.consumerPrefix("interceptor.classes"), "com.example.C");
        main.put(key, "com.example.D");
        TokenReadAhead.install(main, verifier);
        TokenReadAhead.install(main, verifier);
        assertThat(main.get(key)).isEqualTo("com.example.D," + ours);
    }

    private static ConsumerRecord<byte[], byte[]> record(String key, String token, String lease) {
        RecordHeaders headers = new RecordHeaders();
        if (token != null) {
            headers.add(FenceHeaders.TOKEN, token.getBytes(StandardCharsets.UTF_8));
        }
        if (lease != null) {
            headers.add(FenceHeaders.LEASE, lease.getBytes(StandardCharsets.UTF_8));
        }
        return new ConsumerRecord<>(INPUT.topic(), INPUT.partition(), 0, 0, TimestampType.CREATE_TIME, 0, 0,
                key == null ? null : key.getBytes(StandardCharsets.UTF_8), null, headers, Optional.empty());
    }
}
