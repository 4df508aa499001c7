package dev.fencedwrites.services;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * A multi-member etcd cluster on loopback, for tests that kill and restart members.
 *
 * <p>Member {@code i} is named {@code m<i>} and keeps its data dir ({@code <dir>/m<i>/data}), log
 * ({@code <dir>/m<i>/etcd.log}, appended across restarts) and ports for the cluster's whole life, so
 * {@link #endpoints()} stays valid across {@link #kill}/{@link #restart}. Elections are tuned to be quick
 * (100 ms heartbeat, 1 s election timeout). Not thread-safe: drive it from one test thread.
 */
public final class EtcdCluster implements AutoCloseable {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(10);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path etcd;
    private final List<Member> members;
    private final String initialCluster;
    private final String token;
    private final ChildProcess[] processes;

    /** One member's fixed identity: kept across restarts. */
    private record Member(String name, Path dir, int clientPort, int peerPort) {
        String client() {
            return "http://127.0.0.1:" + clientPort;
        }

        String peer() {
            return "http://127.0.0.1:" + peerPort;
        }
    }

    private EtcdCluster(Path etcd, List<Member> members) {
        this.etcd = etcd;
        this.members = List.copyOf(members);
        this.initialCluster = members.stream().map(m -> m.name() + "=" + m.peer()).collect(Collectors.joining(","));
        this.token = "local-stack-" + UUID.randomUUID();
        this.processes = new ChildProcess[members.size()];
    }

    /**
     * Starts {@code members} etcd members as one new cluster under {@code dir} and waits (up to 30 s in
     * all) until every member's {@code /health} reports healthy.
     *
     * @param dir     where the members' data dirs and logs go; created if missing
     * @param members how many members, at least 1 (3 tolerates one member down)
     * @return the running cluster; close it to stop every member
     * @throws IllegalArgumentException if {@code members < 1}
     * @throws IllegalStateException    if etcd is missing, {@code dir} already holds a member's data dir, a
     *                                  member exits or the cluster is not healthy in time (the message carries
     *                                  that member's log tail); all started members are stopped then
     */
    public static EtcdCluster start(Path dir, int members) throws Exception {
        if (members < 1) {
            throw new IllegalArgumentException("an etcd cluster needs at least 1 member, got " + members);
        }
        Path etcd = EtcdNode.binary();
        Set<Integer> ports = new HashSet<>();
        List<Member> list = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            Path memberDir = dir.resolve("m" + i);
            if (Files.exists(memberDir.resolve("data"))) {
                // etcd would ignore the new --initial-cluster and look for the old cluster's peers.
                throw new IllegalStateException(
                        "etcd data dir " + memberDir.resolve("data") + " exists already; start a cluster in a fresh directory");
            }
            Files.createDirectories(memberDir);
            list.add(new Member("m" + i, memberDir, distinctPort(ports), distinctPort(ports)));
        }
        EtcdCluster cluster = new EtcdCluster(etcd, list);
        try {
            // All members first: none becomes healthy before a quorum has joined.
            for (int i = 0; i < members; i++) {
                cluster.launch(i);
            }
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            for (int i = 0; i < members; i++) {
                cluster.awaitHealthy(i, Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            }
            return cluster;
        } catch (Exception | Error e) {
            cluster.close();
            throw e;
        }
    }

    private static int distinctPort(Set<Integer> taken) {
        for (int attempt = 0; attempt < 20; attempt++) {
            int port = FreePorts.pick();
            if (taken.add(port)) {
                return port;
            }
        }
        throw new IllegalStateException("no distinct free port on 127.0.0.1 after 20 attempts");
    }

    /** The members' client URLs ({@code http://127.0.0.1:<port>}), index = member number; the same for the cluster's life. */
    public List<String> endpoints() {
        return members.stream().map(Member::client).toList();
    }

    /** How many members the cluster has, running or not. */
    public int size() {
        return members.size();
    }

    /** Whether member {@code member}'s process is running (it may still be catching up). */
    public boolean isRunning(int member) {
        ChildProcess process = processes[check(member)];
        return process != null && process.isAlive();
    }

    /**
     * The index of the current leader: a running member that says it leads, and that a majority of all
     * members agree on ({@code POST /v3/maintenance/status}). Waits up to 30 s for one.
     *
     * @return the leader's member number, {@code 0 .. size()-1}
     * @throws IllegalStateException if no leader is agreed on within 30 s (e.g. a majority is down)
     */
    public int leader() throws InterruptedException {
        int[] found = {-1};
        Await.until("an etcd leader among " + endpoints(), TIMEOUT, null, () -> {
            found[0] = currentLeader();
            return found[0] >= 0;
        });
        return found[0];
    }

    /** One look at the running members: the agreed leader's index, or -1. */
    private int currentLeader() {
        Map<String, Integer> votes = new HashMap<>();
        Map<String, Integer> selfLeaders = new HashMap<>();
        for (int i = 0; i < members.size(); i++) {
            if (!isRunning(i)) {
                continue;
            }
            JsonNode status;
            try {
                status = status(i);
            } catch (Exception e) {
                continue; // starting, stopping or without quorum: not a vote
            }
            String self = status.path("header").path("member_id").asText("");
            String leader = status.path("leader").asText("0");
            if (leader.isEmpty() || leader.equals("0")) {
                continue;
            }
            votes.merge(leader, 1, Integer::sum);
            if (leader.equals(self)) {
                selfLeaders.put(self, i);
            }
        }
        int majority = members.size() / 2 + 1;
        for (Map.Entry<String, Integer> leader : selfLeaders.entrySet()) {
            if (votes.getOrDefault(leader.getKey(), 0) >= majority) {
                return leader.getValue();
            }
        }
        return -1;
    }

    private JsonNode status(int member) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(members.get(member).client() + "/v3/maintenance/status"))
                .timeout(Duration.ofSeconds(2)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException(
                    "status of " + members.get(member).name() + " answered " + response.statusCode() + ": " + response.body());
        }
        return JSON.readTree(response.body());
    }

    /**
     * Member {@code member}'s process id (a restart gives a new one).
     *
     * @throws IllegalStateException if the member is not running
     */
    public long pid(int member) {
        ChildProcess process = processes[check(member)];
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("etcd member " + members.get(member).name() + " is not running");
        }
        return process.pid();
    }

    /**
     * Sends member {@code member}'s process a signal by name: {@code STOP} freezes it as a stalled disk or a paused VM would
     * (its sockets stay open, the others elect a new leader if it led), {@code CONT} lets it run again.
     *
     * @throws IndexOutOfBoundsException if there is no such member
     * @throws IllegalStateException     if the member is not running
     */
    public void signal(int member, String signal) {
        ChildProcess process = processes[check(member)];
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("etcd member " + members.get(member).name() + " is not running");
        }
        process.signal(signal);
    }

    /**
     * SIGKILLs member {@code member} and waits (up to 10 s) until its process has exited. Its data dir and
     * ports are kept for {@link #restart}.
     *
     * @throws IndexOutOfBoundsException if there is no such member
     * @throws IllegalStateException     if the member is not running or does not exit
     */
    public void kill(int member) throws InterruptedException {
        ChildProcess process = processes[check(member)];
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("etcd member " + members.get(member).name() + " is not running");
        }
        process.signal("KILL");
        if (process.waitFor(EXIT_TIMEOUT) == -1) {
            throw new IllegalStateException("etcd member " + members.get(member).name() + " (pid " + process.pid()
                    + ") still running " + EXIT_TIMEOUT.toSeconds() + " s after SIGKILL");
        }
    }

    /**
     * Starts a stopped member again with its old name, data dir and ports (it rejoins from its data dir)
     * and waits up to 30 s until its {@code /health} reports healthy, i.e. it has a leader and serves
     * quorum reads.
     *
     * @throws IndexOutOfBoundsException if there is no such member
     * @throws IllegalStateException     if the member is still running, exits, or is not healthy in time
     *                                   (with the log's tail; the new process is stopped then)
     */
    public void restart(int member) throws InterruptedException {
        if (isRunning(member)) {
            throw new IllegalStateException("etcd member " + members.get(member).name() + " is still running; kill it first");
        }
        launch(member);
        try {
            awaitHealthy(member, TIMEOUT);
        } catch (InterruptedException | RuntimeException e) {
            processes[member].close();
            throw e;
        }
    }

    private void launch(int index) {
        Member m = members.get(index);
        // With an existing data dir etcd ignores the --initial-* flags, so the same command serves a restart.
        processes[index] = ChildProcess.start("etcd " + m.name(), List.of(etcd.toString(),
                "--name", m.name(), "--data-dir", m.dir().resolve("data").toString(),
                "--listen-client-urls", m.client(), "--advertise-client-urls", m.client(),
                "--listen-peer-urls", m.peer(), "--initial-advertise-peer-urls", m.peer(),
                "--initial-cluster", initialCluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", token,
                "--heartbeat-interval", "100", "--election-timeout", "1000"),
                m.dir(), m.dir().resolve("etcd.log"), Map.of());
    }

    private void awaitHealthy(int index, Duration timeout) throws InterruptedException {
        String client = members.get(index).client();
        Await.until("etcd " + members.get(index).name() + " at " + client + " healthy", timeout, processes[index],
                () -> Http.get(client + "/health").body().contains("\"true\""));
    }

    private int check(int member) {
        return Objects.checkIndex(member, members.size());
    }

    /**
     * Stops every running member with SIGTERM (SIGKILL for any still running 20 s later): the followers
     * first, then the leader. A leader stopped while its followers run would hand leadership over first,
     * and one stopped together with them waits ~7 s for a handover that cannot happen.
     */
    @Override
    public void close() {
        int leader;
        try {
            leader = currentLeader();
        } catch (RuntimeException e) {
            leader = -1;
        }
        List<ChildProcess> followers = new ArrayList<>();
        for (int i = 0; i < processes.length; i++) {
            if (i != leader) {
                followers.add(processes[i]);
            }
        }
        ChildProcess.stopAll(followers, Duration.ofSeconds(20));
        if (leader >= 0) {
            ChildProcess.stopAll(Collections.singletonList(processes[leader]), Duration.ofSeconds(20));
        }
    }
}
