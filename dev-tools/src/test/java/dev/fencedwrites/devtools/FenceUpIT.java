package dev.fencedwrites.devtools;

import static dev.fencedwrites.devtools.SourcedEnvFile.UP_VARIABLES;
import static dev.fencedwrites.devtools.SourcedEnvFile.listening;
import static dev.fencedwrites.devtools.SourcedEnvFile.sourced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.devtools.chaos.Fault;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Jvm;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: {@code ./fence up} is only useful if every address it prints answers, {@code ./fence chaos --stack}
 * runs against it with the fault commands it writes, and nothing outlives {@code ./fence down} (SIGTERM). In the slow
 * lane (about 100 s; docs/dev/testing.md).
 */
@Tag("slow")
@Timeout(value = 9, unit = TimeUnit.MINUTES)
class FenceUpIT {

    @TempDir
    Path dir;

    @Test
    void printsWhereEveryServiceAnswersAndStopsThemOnFenceDown() throws Exception {
        StackTools.requireChaos();
        Path envFile = dir.resolve("stack.env");
        ChildProcess up = ChildProcess.start("fence up", Jvm.command(List.of(), null, DevMain.class.getName(),
                List.of("up", "--dir", dir.resolve("stack").toString(), "--env-file", envFile.toString())), dir,
                dir.resolve("up.log"), Map.of());
        Map<String, String> env;
        try {
            await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(250))
                    .failFast("fence up exited", () -> !up.isAlive())
                    .until(() -> Files.exists(envFile) && Files.readAllLines(envFile).size() == UP_VARIABLES.size());
            env = sourced(envFile, UP_VARIABLES);
            assertThat(env).containsOnlyKeys(UP_VARIABLES);
            assertThat(Files.readString(up.log())).contains(Files.readString(envFile));
            assertThat(env.get("POSTGRES_URL")).startsWith("jdbc:postgresql://127.0.0.1:")
                    .endsWith("?user=postgres&password=postgres");

            assertThat(clusterNodes(env.get("KAFKA_BOOTSTRAP"))).isEqualTo(1);
            assertThat(Http.get(env.get("ETCD_ENDPOINTS") + "/health").body()).contains("\"health\":\"true\"");
            assertThat(Http.get(env.get("SCHEMA_REGISTRY_URL") + "/subjects").statusCode()).isEqualTo(200);
            try (Connection connection = DriverManager.getConnection(env.get("POSTGRES_URL"))) {
                assertThat(connection.isValid(5)).isTrue();
            }
            assertThat(Http.get(env.get("CONNECT_URL") + "/connectors/" + BillingConnectors.SINK_CONNECTOR + "/status").body())
                    .contains("RUNNING");
            assertThat(Http.get(env.get("ENFORCER_URL") + "/health").statusCode()).isEqualTo(200);

            chaosAgainstThisStack(envFile, env);

            // The fault commands ./fence chaos --stack takes from the env file: a killed enforcer is restarted by up.
            Path pidFile = dir.resolve("stack/pids/enforcer-0.pid");
            long killed = Long.parseLong(Files.readString(pidFile).strip());
            assertThat(sh(env.get("FENCE_FAULT_ENFORCER_KILL"))).isZero();
            assertThat(ProcessHandle.of(killed).filter(ProcessHandle::isAlive)).isEmpty();
            assertThat(Long.parseLong(Files.readString(pidFile).strip())).isNotEqualTo(killed);
            assertThat(Http.get(env.get("ENFORCER_URL") + "/health/ready").statusCode()).isEqualTo(200);
            assertThat(Files.readString(up.log())).contains("enforcer 0 exited; restarting it").contains("enforcer 0 is back");
            assertThat(sh(env.get("FENCE_FAULT_ETCD_PAUSE"))).isZero();
            assertThat(Http.get(env.get("ETCD_ENDPOINTS") + "/health").body()).contains("\"health\":\"true\"");

            // ./fence down, as a user stops an up running in the background: SIGTERM to the process its env file names.
            assertThat(env.get("FENCE_UP_PID")).isEqualTo(Long.toString(up.pid()));
            FenceRun down = FenceRun.of("down", "--env-file", envFile.toString());
            assertThat(down.exit()).as(down.err()).isZero();
            assertThat(down.err()).contains("stopped every service and exited in");
            assertThat(up.isAlive()).isFalse();
        } finally {
            if (up.isAlive()) { // a fence up that died already would hide why behind a failed kill
                up.signal("TERM");
            } else {
                System.out.println("[fence up exited early; its log]\n" + Files.readString(up.log()));
            }
        }
        // 143 = 128 + SIGTERM (./fence down's): the JVM ran its shutdown hooks (which stop the stack) and exited; -1 would
        // mean it hung.
        assertThat(up.waitFor(Duration.ofSeconds(90))).isEqualTo(143);
        for (String url : List.of(env.get("ETCD_ENDPOINTS"), env.get("SCHEMA_REGISTRY_URL"), env.get("CONNECT_URL"),
                env.get("CONNECT_METRICS_URL"), env.get("ENFORCER_URL"),
                "tcp://" + env.get("KAFKA_BOOTSTRAP"))) {
            assertThat(listening(URI.create(url))).as("%s still listening after ./fence down", url).isFalse();
        }
        assertThat(envFile).doesNotExist();
        FenceRun again = FenceRun.of("down", "--env-file", envFile.toString());
        assertThat(again.exit()).isZero();
        assertThat(again.err()).contains("nothing to stop");
    }

    /**
     * {@code ./fence chaos --stack} against this stack, as a user runs it beside {@code ./fence up}: the connection
     * and the service faults' commands from up's env file, one fault command given on the command line instead.
     */
    private void chaosAgainstThisStack(Path envFile, Map<String, String> env) throws Exception {
        Path runDir = dir.resolve("chaos");
        // --postgres given as well, as a user whose database is not the env file's would.
        FenceRun run = FenceRun.of("chaos", "--stack", "--env-file", envFile.toString(), "--postgres", env.get("POSTGRES_URL"),
                "--duration", "30s", "--seed", "20261204", "--dir", runDir.toString(),
                // clock-jump is ChaosIT's: a libfaketime writer takes about 10 s more to start, a third of this run.
                "--skewed", "0", "--faults", "worker-pause,worker-kill,enforcer-pause,etcd-pause,inject",
                "--fault-command", "etcd-pause=" + env.get("FENCE_FAULT_ETCD_PAUSE"));
        ChaosIT.assertPassed(run, runDir,
                EnumSet.of(Fault.WORKER_PAUSE, Fault.WORKER_KILL, Fault.ENFORCER_PAUSE, Fault.ETCD_PAUSE, Fault.INJECT));
    }

    /** Runs a fault command as chaos runs it, with a one-second fault; returns its exit status. */
    private static int sh(String command) throws Exception {
        ProcessBuilder builder = new ProcessBuilder("sh", "-c", command).inheritIO();
        builder.environment().put("FENCE_FAULT_MILLIS", "1000");
        builder.environment().put("FENCE_FAULT_SECONDS", "1");
        Process process = builder.start();
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).as("%s returned", command).isTrue();
        return process.exitValue();
    }

    private static int clusterNodes(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            return admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size();
        }
    }
}
