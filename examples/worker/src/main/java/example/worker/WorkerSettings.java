package example.worker;

import java.time.Duration;
import java.util.Map;

/**
 * The worker's settings, from environment variables only (a container sets them; nothing needs a file). etcd's come
 * separately, as {@code FENCE_ETCD_*} variables or an {@code etcd.*} properties file ({@code EtcdSettings}).
 *
 * @param bootstrap      {@code KAFKA_BOOTSTRAP}, required: the Kafka cluster's bootstrap servers
 * @param registryUrl    {@code SCHEMA_REGISTRY_URL}, required: the Confluent-compatible schema registry
 * @param workerId       {@code WORKER_ID}: this worker's {@code fence.writer}; default {@code worker-<pid>}
 * @param resource       {@code WORKER_RESOURCE}: the key to take the lease of and write; default {@code customer-42}
 * @param ttl            {@code WORKER_TTL_MS}: the lease's TTL; default 10000
 * @param writes         {@code WORKER_WRITES}: how many writes to publish; default 3
 * @param interval       {@code WORKER_INTERVAL_MS}: the wait between writes; default 1000
 * @param lingerMs       {@code WORKER_LINGER_MS}: the producer's {@code linger.ms}; default 5
 * @param decisionWait   {@code WORKER_DECISION_WAIT_MS}: how long to wait for the decisions on its writes; default 30000
 * @param metricsPort    {@code WORKER_METRICS_PORT}: where {@code /metrics} is served on 127.0.0.1; default 0 (any free port)
 * @param propertiesFile {@code WORKER_PROPERTIES}: an optional {@code etcd.*} properties file; default {@code worker.properties}
 */
record WorkerSettings(String bootstrap, String registryUrl, String workerId, String resource, Duration ttl, int writes,
        Duration interval, int lingerMs, Duration decisionWait, int metricsPort, String propertiesFile) {

    /** @throws IllegalArgumentException naming the variable that is missing or not a number */
    static WorkerSettings from(Map<String, String> env) {
        return new WorkerSettings(required(env, "KAFKA_BOOTSTRAP"), required(env, "SCHEMA_REGISTRY_URL"),
                env.getOrDefault("WORKER_ID", "worker-" + ProcessHandle.current().pid()),
                env.getOrDefault("WORKER_RESOURCE", "customer-42"), Duration.ofMillis(number(env, "WORKER_TTL_MS", 10_000)),
                (int) number(env, "WORKER_WRITES", 3), Duration.ofMillis(number(env, "WORKER_INTERVAL_MS", 1_000)),
                (int) number(env, "WORKER_LINGER_MS", 5), Duration.ofMillis(number(env, "WORKER_DECISION_WAIT_MS", 30_000)),
                (int) number(env, "WORKER_METRICS_PORT", 0), env.getOrDefault("WORKER_PROPERTIES", "worker.properties"));
    }

    private static String required(Map<String, String> env, String name) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " is required (after ./fence up: source .fence/stack.env)");
        }
        return value;
    }

    private static long number(Map<String, String> env, String name, long otherwise) {
        String value = env.get(name);
        try {
            return value == null ? otherwise : Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, got '" + value + "'");
        }
    }
}
