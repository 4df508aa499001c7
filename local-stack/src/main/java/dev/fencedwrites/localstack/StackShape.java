package dev.fencedwrites.localstack;

import java.util.List;
import java.util.Map;

/**
 * What a {@link LocalStack} runs, as {@link LocalStackBuilder} collected it.
 *
 * @param connectors     the connectors the Connect cluster runs
 * @param secured        whether Kafka is secured ({@link LocalStackBuilder#secured()})
 * @param cluster        whether the stack is clustered ({@link LocalStackBuilder#cluster()})
 * @param enforcer       extra settings for every enforcer instance
 * @param connectWorker  extra settings for every Connect worker
 */
record StackShape(List<Connector> connectors, boolean secured, boolean cluster, Map<String, String> enforcer,
        Map<String, String> connectWorker) {
    StackShape {
        connectors = List.copyOf(connectors);
        enforcer = Map.copyOf(enforcer);
        connectWorker = Map.copyOf(connectWorker);
    }

    /** Kafka nodes: 3 clustered, else 1. */
    int brokers() {
        return cluster ? 3 : 1;
    }

    /** etcd members: 3 clustered, else 1. */
    int etcdMembers() {
        return cluster ? 3 : 1;
    }

    /** Enforcer instances (one application id): 2 clustered, else 1. */
    int enforcers() {
        return cluster ? 2 : 1;
    }

    /** Connect workers (one group): 2 clustered, else 1. */
    int connectWorkers() {
        return cluster ? 2 : 1;
    }

    /** Each Kafka node's heap: 512 MiB in a cluster (three of them), else 768 MiB. */
    String brokerHeap() {
        return cluster ? "512m" : "768m";
    }
}
