package dev.fencedwrites.devtools;

import static dev.fencedwrites.devtools.SourcedEnvFile.UP_VARIABLES;
import static dev.fencedwrites.devtools.SourcedEnvFile.listening;
import static dev.fencedwrites.devtools.SourcedEnvFile.sourced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Jvm;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: the clustered stack of {@code ./fence up --cluster} is only the production shape if three
 * real brokers replicate every topic, two real enforcers share one group and two distributed Connect workers share the
 * sink. One cluster start for the whole class.
 */
@Tag("failover")
@Timeout(value = 14, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterUpIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;
    static Path envFile;
    static ChildProcess up;
    static Map<String, String> env;
    static long readyMillis;

    @BeforeAll
    static void startTheClusteredStack() throws Exception {
        StackTools.requireStack();
        envFile = dir.resolve("stack.env");
        long begin = System.nanoTime();
        up = ChildProcess.start("fence up --cluster", Jvm.command(List.of(), null, DevMain.class.getName(),
                List.of("up", "--cluster", "--dir", dir.resolve("stack").toString(), "--env-file", envFile.toString())), dir,
                dir.resolve("up.log"), Map.of());
        try {
            await().atMost(Duration.ofMinutes(8)).pollInterval(Duration.ofMillis(250))
                    .failFast("fence up --cluster exited", () -> !up.isAlive())
                    .until(() -> Files.exists(envFile) && Files.readAllLines(envFile).size() == UP_VARIABLES.size());
        } catch (RuntimeException e) {
            System.out.println("[fence up --cluster did not get ready; its log]\n" + Files.readString(up.log()));
            throw e;
        }
        readyMillis = (System.nanoTime() - begin) / 1_000_000;
        System.out.printf("[ClusterUpIT] fence up --cluster printed its lines after %.1f s%n", readyMillis / 1000.0);
        env = sourced(envFile, UP_VARIABLES);
    }

    @AfterAll
    static void stopWhatIsLeft() throws Exception {
        if (up != null && up.isAlive()) {
            up.signal("TERM");
            up.waitFor(Duration.ofSeconds(90));
        }
    }

    @Test
    @Order(1)
    void printsEveryBrokerEtcdMemberEnforcerAndConnectWorkerAndEachServicesReadyTime() throws Exception {
        assertThat(env).containsOnlyKeys(UP_VARIABLES);
        assertThat(Files.readString(up.log())).contains(Files.readString(envFile));
        assertThat(env.get("KAFKA_BOOTSTRAP").split(",")).hasSize(3).allMatch(a -> a.startsWith("127.0.0.1:"));
        assertThat(env.get("ETCD_ENDPOINTS").split(",")).hasSize(3).allMatch(a -> a.startsWith("http://127.0.0.1:"));
        assertThat(env.get("ENFORCER_URLS").split(",")).hasSize(2).startsWith(env.get("ENFORCER_URL"));
        assertThat(env.get("CONNECT_URLS").split(",")).hasSize(2).startsWith(env.get("CONNECT_URL"));
        assertThat(env.get("CONNECT_METRICS_URLS").split(",")).hasSize(2).startsWith(env.get("CONNECT_METRICS_URL"));
        for (String url : env.get("CONNECT_METRICS_URLS").split(",")) {
            assertThat(Http.get(url).body()).as(url).contains("kafka_connect_");
        }
        for (String url : env.get("ENFORCER_URLS").split(",")) {
            assertThat(Http.get(url + "/health/ready").statusCode()).as(url).isEqualTo(200);
        }
        for (String endpoint : env.get("ETCD_ENDPOINTS").split(",")) {
            assertThat(Http.get(endpoint + "/health").body()).as(endpoint).contains("\"health\":\"true\"");
        }
        assertThat(Files.readString(up.log())).contains("Kafka cluster (3 brokers) ready in", "etcd cluster (3 members) ready in",
                "fence enforcer 1/2 ready in", "fence enforcer 2/2 ready in", "Connect worker 1/2 ready in",
                "Connect worker 2/2 ready in", "all services ready in");
    }

    @Test
    @Order(2)
    void everyTopicOfThePipelineHasThreeReplicasAndMinInsyncReplicasTwo() throws Exception {
        try (Admin admin = admin()) {
            Set<String> topics = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(30, TimeUnit.SECONDS);
            assertThat(topics).contains(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS,
                    "fence-connect-configs", "fence-connect-offsets", "fence-connect-status", "__consumer_offsets",
                    "__transaction_state");
            assertThat(topics).as("the enforcer's changelogs").anyMatch(t -> t.startsWith("fence-enforcer-")
                    && t.endsWith("-changelog"));
            Map<String, TopicDescription> descriptions = admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS);
            descriptions.values().forEach(topic -> topic.partitions().forEach(partition -> assertThat(partition.replicas())
                    .as("replicas of %s-%d", topic.name(), partition.partition()).hasSize(3)));
            List<ConfigResource> resources = topics.stream().map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
            Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
            configs.forEach((resource, config) -> assertThat(config.get("min.insync.replicas").value())
                    .as("min.insync.replicas of %s", resource.name()).isEqualTo("2"));
            System.out.printf("[ClusterUpIT] %d topics, each with 3 replicas per partition and min.insync.replicas=2: %s%n",
                    topics.size(), new TreeSet<>(topics));
        }
    }

    @Test
    @Order(3)
    void bothEnforcersAreMembersOfOneConsumerGroupAndEachKeepsAStandbyOfTheOthersTasks() throws Exception {
        try (Admin admin = admin()) {
            ConsumerGroupDescription group = admin.describeConsumerGroups(List.of("fence-enforcer")).all()
                    .get(30, TimeUnit.SECONDS).get("fence-enforcer");
            assertThat(group.members()).hasSize(2);
            Set<TopicPartition> input = new HashSet<>();
            for (MemberDescription member : group.members()) {
                List<TopicPartition> owned = member.assignment().topicPartitions().stream()
                        .filter(tp -> tp.topic().equals(FenceTopics.INPUT)).toList();
                assertThat(owned).as("input partitions of %s", member.clientId()).isNotEmpty();
                input.addAll(owned);
            }
            assertThat(input).hasSize(3);
        }
        Set<String> standby = new HashSet<>();
        for (Path log : List.of(dir.resolve("stack/enforcer/enforcer.log"), dir.resolve("stack/enforcer-1/enforcer.log"))) {
            Assignment assignment = lastAssignment(Files.readString(log));
            assertThat(assignment.standby()).as("standby tasks that are also active in %s", log)
                    .doesNotContainAnyElementsOf(assignment.active());
            standby.addAll(assignment.standby());
        }
        assertThat(standby).as("standby tasks over both instances").isNotEmpty();
    }

    @Test
    @Order(4)
    void bothConnectWorkersHoldSinkTasks() {
        Set<String> expected = Arrays.stream(env.get("CONNECT_URLS").split(",")).map(u -> u.substring("http://".length()))
                .collect(Collectors.toSet());
        // A worker that joined the group late gets its task at the next rebalance (scheduled.rebalance.max.delay.ms).
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            JsonNode status = JSON.readTree(Http.get(env.get("CONNECT_URL") + "/connectors/" + BillingConnectors.SINK_CONNECTOR
                    + "/status").body());
            Set<String> workers = new HashSet<>();
            status.path("tasks").forEach(task -> {
                assertThat(task.path("state").asText()).as("task %s", task.path("id")).isEqualTo("RUNNING");
                workers.add(task.path("worker_id").asText());
            });
            assertThat(workers).isEqualTo(expected);
        });
    }

    @Test
    @Order(5)
    void aFencedWriteFlowsThroughToPostgresql() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine line = DevMain.commandLine();
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(err));
        int exit = line.execute("produce", "customer-cluster-1", "--amount", "4217", "--ttl", "60s",
                "--env-file", envFile.toString());
        assertThat(exit).as("fence produce: %s %s", out, err).isZero();
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            try (Connection connection = DriverManager.getConnection(env.get("POSTGRES_URL"));
                    PreparedStatement select = connection.prepareStatement(
                            "select amount_minor, fence_token from " + BillingConnectors.TABLE + " where resource_key = ?")) {
                select.setString(1, "customer-cluster-1");
                try (ResultSet row = select.executeQuery()) {
                    assertThat(row.next()).as("row customer-cluster-1").isTrue();
                    assertThat(row.getLong("amount_minor")).isEqualTo(4217);
                    assertThat(row.getLong("fence_token")).isPositive();
                }
            }
        });
    }

    @Test
    @Order(6)
    void sigtermStopsEveryServiceItStarted() throws Exception {
        List<String> urls = new ArrayList<>();
        urls.add(env.get("SCHEMA_REGISTRY_URL"));
        urls.addAll(List.of(env.get("CONNECT_METRICS_URLS").split(",")));
        urls.addAll(List.of(env.get("ETCD_ENDPOINTS").split(",")));
        urls.addAll(List.of(env.get("ENFORCER_URLS").split(",")));
        urls.addAll(List.of(env.get("CONNECT_URLS").split(",")));
        Arrays.stream(env.get("KAFKA_BOOTSTRAP").split(",")).map(a -> "tcp://" + a).forEach(urls::add);
        long begin = System.nanoTime();
        up.signal("TERM");
        // 143 = 128 + SIGTERM: the JVM ran its shutdown hooks (which stop the stack) and exited; -1 would mean it hung.
        assertThat(up.waitFor(Duration.ofSeconds(120))).isEqualTo(143);
        System.out.printf("[ClusterUpIT] stopped in %.1f s%n", (System.nanoTime() - begin) / 1e9);
        for (String url : urls) {
            assertThat(listening(URI.create(url))).as("%s still listening after SIGTERM", url).isFalse();
        }
        assertThat(envFile).doesNotExist();
    }

    /** The tasks a Kafka Streams instance runs after a rebalance, as its TaskManager logged them. */
    private record Assignment(Set<String> active, Set<String> standby) {
    }

    /**
     * The last assignment in an enforcer's log: Kafka Streams' TaskManager logs "Handle new assignment with:" and then
     * one line each for the new and existing active and standby tasks, e.g. {@code \tNew standby tasks: [0_1]}.
     */
    private static Assignment lastAssignment(String log) {
        List<String> lines = log.lines().toList();
        int start = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("Handle new assignment with:")) {
                start = i;
            }
        }
        assertThat(start).as("an assignment in the enforcer's log").isNotNegative();
        Set<String> active = new HashSet<>();
        Set<String> standby = new HashSet<>();
        for (String line : lines.subList(start + 1, Math.min(lines.size(), start + 5))) {
            String tasks = line.substring(line.indexOf('[') + 1, line.lastIndexOf(']'));
            Set<String> target = line.contains("standby tasks:") ? standby : active;
            Arrays.stream(tasks.split(",")).map(String::strip).filter(t -> !t.isEmpty()).forEach(target::add);
        }
        return new Assignment(active, standby);
    }

    private static Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, env.get("KAFKA_BOOTSTRAP")));
    }
}
