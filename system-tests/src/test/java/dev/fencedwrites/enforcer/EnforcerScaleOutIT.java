package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: sharing partitions between two enforcer processes, failing over when one
 * is killed, and answering {@code /fences/{key}} for keys another instance owns all run through
 * a real broker's consumer group and Kafka Streams' interactive-query metadata; both instances
 * verify raising tokens in a real etcd.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class EnforcerScaleOutIT {
    private static final int PARTITIONS = 4;
    private static final int KEYS = 40;
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void survivorTakesOverWithoutRegressingAnyDecisionAndEitherInstanceAnswersForEveryKey() throws Exception {
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        try (Service etcd = EtcdNode.start(dir.resolve("etcd"));
                Service kafka = KafkaBroker.start(dir.resolve("kafka"), log4j2)) {
            Workload.createTopics(kafka.address(), PARTITIONS);
            Map<String, String> settings = EnforcerCrashIT.verifying(EnforcerCrashIT.FAST_FAILOVER, etcd);
            try (Workload workload = new Workload(kafka.address(), etcd.address(), KEYS, 7);
                    Workload.Outputs outputs = new Workload.Outputs(kafka.address(), PARTITIONS);
                    Service first = EnforcerProcess.start(dir.resolve("first"), log4j2, kafka.address(), settings);
                    Service second = EnforcerProcess.start(dir.resolve("second"), log4j2, kafka.address(), settings)) {
                Await.until("both instances running", Duration.ofMinutes(2), null,
                        () -> Http.ok(first.address() + "/health") && Http.ok(second.address() + "/health"));
                workload.produceUntil(20_000);
                Await.until("the first 20 000 inputs decided", Duration.ofMinutes(3), null,
                        () -> outputs.poll() >= workload.expectedOutputs());

                Set<String> owners = new HashSet<>();
                for (int k = 0; k < KEYS; k++) {
                    String key = Workload.key(k);
                    JsonNode fromFirst = fence(first, key);
                    JsonNode fromSecond = fence(second, key);
                    assertThat(text(fromFirst)).as("fence of %s from the first instance", key).isEqualTo(workload.fence(key));
                    assertThat(text(fromSecond)).as("fence of %s from the second instance", key).isEqualTo(workload.fence(key));
                    owners.add(fromFirst.path("served_by").asText());
                }
                assertThat(owners).as("keys are owned by both instances, so each answered for the other's keys").hasSize(2)
                        .allMatch(owner -> owner.matches("127\\.0\\.0\\.1:\\d+"));
                for (Service instance : new Service[]{first, second}) {
                    assertThat(Http.get(instance.address() + "/fences/no-such-key").statusCode()).isEqualTo(404);
                    String metrics = Http.get(instance.address() + "/metrics").body();
                    assertThat(metrics).contains("fence_enforcer_records_accepted_total",
                            "fence_enforcer_records_fenced_total{reason=\"STALE_TOKEN\"}", "kafka_stream_");
                    assertThat(EnforcerCrashIT.counter(instance, "fence_enforcer_token_verifications_total{outcome=\"verified\""))
                            .as("tokens verified in etcd")
                            .isPositive();
                }

                workload.produceUntil(50_000);
                Await.until("5 000 more inputs decided", Duration.ofMinutes(3), null, () -> outputs.poll() >= 25_000);
                first.process().signal("KILL");
                System.out.printf("killed the first instance mid-stream with %d of %d inputs decided%n", outputs.poll(),
                        workload.sent().size());
                Await.until("all inputs decided by the survivor", Duration.ofMinutes(4), second.process(),
                        () -> outputs.poll() >= workload.expectedOutputs());
                outputs.settle(Duration.ofSeconds(3));
                outputs.assertMatches(workload.sent());
                System.out.println(workload.lockCost());
                assertThat(workload.sent()).as("forged tokens in the workload, each rejected with the model's reason")
                        .anyMatch(s -> s.expected().reason() == RejectionReason.LOCK_NOT_HELD)
                        .anyMatch(s -> s.expected().reason() == RejectionReason.FUTURE_TOKEN);

                Await.until("the survivor answers for every key", Duration.ofMinutes(1), second.process(), () -> {
                    for (int k = 0; k < KEYS; k++) {
                        // Until the rebalance the survivor still routes the dead instance's keys to it (503): not yet, not a
                        // failure.
                        HttpResponse<String> response = Http.get(second.address() + "/fences/" + Workload.key(k));
                        if (response.statusCode() != 200
                                || !workload.fence(Workload.key(k)).equals(text(JSON.readTree(response.body())))) {
                            return false;
                        }
                    }
                    return true;
                });
            }
        }
    }

    private static JsonNode fence(Service enforcer, String key) throws Exception {
        HttpResponse<String> response = Http.get(enforcer.address() + "/fences/" + key);
        assertThat(response.statusCode()).as("GET /fences/%s: %s", key, response.body()).isEqualTo(200);
        return JSON.readTree(response.body());
    }

    private static String text(JsonNode fence) {
        return fence.path("seq").isNull()
                ? fence.path("token").asText()
                : fence.path("token").asText() + "." + fence.path("seq").asText();
    }
}
