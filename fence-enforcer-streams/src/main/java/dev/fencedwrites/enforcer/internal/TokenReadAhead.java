package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.enforcer.TokenVerifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The main consumer's interceptor that starts token verification as soon as a poll returns: for each record with a
 * {@code fence.token} and a {@code fence.lease}, {@link TokenVerifier#readAhead} sends its etcd read, so the reads of a
 * whole poll are in flight together (in a few read-only transactions) and each decision waits only for its own answer,
 * in input order. Kafka Streams calls {@link #onConsume} on the stream thread, with the records it is about to buffer for
 * processing, under the classic and the {@code streams} group protocol alike ({@code main.consumer.interceptor.classes},
 * KIP-42). It decides nothing and changes no record; a record whose headers it cannot read is left to the decision.
 */
public final class TokenReadAhead implements ConsumerInterceptor<byte[], byte[]> {
    /** The consumer setting (under {@code main.consumer.}) that carries the {@link TokenVerifier} instance. */
    public static final String VERIFIER_CONFIG = "fence.enforcer.token.verifier";
    private static final Logger LOG = LoggerFactory.getLogger(TokenReadAhead.class);

    private TokenVerifier verifier;

    /**
     * Adds this interceptor after the main consumer's own ({@code main.consumer.interceptor.classes}, else
     * {@code consumer.interceptor.classes}, else {@code interceptor.classes}: Kafka Streams' precedence) and hands it
     * {@code verifier}.
     *
     * @param streamsProperties the Kafka Streams application's properties; changed in place
     */
    public static void install(Properties streamsProperties, TokenVerifier verifier) {
        String interceptors = ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG;
        String main = StreamsConfig.mainConsumerPrefix(interceptors);
        Object given = Stream.of(main, StreamsConfig.consumerPrefix(interceptors), interceptors)
                .map(streamsProperties::get).filter(Objects::nonNull).findFirst().orElse(null);
        List<String> classes = new ArrayList<>(classNames(given));
        if (!classes.contains(TokenReadAhead.class.getName())) {
            classes.add(TokenReadAhead.class.getName());
        }
        streamsProperties.put(main, String.join(",", classes));
        streamsProperties.put(StreamsConfig.mainConsumerPrefix(VERIFIER_CONFIG), verifier);
    }

    /** The class names of a list setting's value: a comma-separated string, a list of names or classes, or a class. */
    static List<String> classNames(Object value) {
        if (value == null) {
            return List.of();
        }
        if (value instanceof Class<?> type) {
            return List.of(type.getName());
        }
        if (value instanceof Collection<?> items) {
            return items.stream().map(item -> item instanceof Class<?> type ? type.getName() : String.valueOf(item).trim())
                    .filter(name -> !name.isEmpty()).toList();
        }
        return Stream.of(String.valueOf(value).split(",")).map(String::trim).filter(name -> !name.isEmpty()).toList();
    }

    @Override
    public void configure(Map<String, ?> configs) {
        Object configured = configs.get(VERIFIER_CONFIG);
        if (configured instanceof TokenVerifier tokens) {
            verifier = tokens;
        } else {
            LOG.warn("no token verifier under {}: tokens are not read ahead, each decision reads its own", VERIFIER_CONFIG);
        }
    }

    @Override
    public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
        if (verifier == null) {
            return records;
        }
        List<TokenVerifier.Question> questions = new ArrayList<>(records.count());
        for (ConsumerRecord<byte[], byte[]> record : records) {
            byte[] key = record.key();
            if (key == null || key.length == 0) {
                continue;
            }
            long token = decimal(record.headers().lastHeader(FenceHeaders.TOKEN));
            // Most records carry a token the verifier's index answers: their lease is not even read.
            if (token <= 0 || verifier.answersLocally(key, token)) {
                continue;
            }
            long lease = decimal(record.headers().lastHeader(FenceHeaders.LEASE));
            if (lease > 0) {
                questions.add(new TokenVerifier.Question(key, token, lease));
            }
        }
        if (!questions.isEmpty()) {
            verifier.readAhead(questions);
        }
        return records;
    }

    /** The header's positive decimal value, or -1. */
    private static long decimal(Header header) {
        return header == null ? -1 : FenceStamp.parseDecimal(header.value());
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        // Nothing to do: verdicts do not depend on commits.
    }

    @Override
    public void close() {
        // The verifier belongs to the application, which closes it.
    }
}
