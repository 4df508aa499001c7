package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.services.NetworkLinks;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.IntPredicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

/**
 * {@code fence chaos}'s network faults on a stack it started, also the failover suite's: which process to cut from which,
 * by {@link NetworkLinks} rules on the processes' group ids and listening ports, read when each fault begins (a restart
 * changes both). The stack's children must run under {@code ChildProcess.ownGroupEach()}.
 */
public final class LinkFaults {
    /** The share of packets a slow link drops. */
    static final double SLOW_LINK_LOSS = 0.25;
    /** The port in a JDBC URL: {@code jdbc:postgresql://127.0.0.1:5432/fence}. */
    private static final Pattern URL_PORT = Pattern.compile("//[^:/]+:(\\d+)/");

    private final LocalStack stack;
    private final NetworkLinks links;

    /**
     * One link fault in progress.
     *
     * @param name   the link's name in {@link NetworkLinks}
     * @param detail what was cut, for the report: {@code writer-2 cut from etcd (ports 2379, 2380)}
     */
    public record Cut(String name, String detail) {
    }

    public LinkFaults(LocalStack stack, NetworkLinks links) {
        this.stack = stack;
        this.links = links;
    }

    /**
     * Begins {@code fault} on a process drawn with {@code random}; empty when it cannot happen now (no writer running).
     *
     * @param name the link's name, unique among the faults in progress
     */
    Optional<Cut> begin(Fault fault, String name, Random random, WriterFleet fleet) throws InterruptedException {
        return switch (fault) {
            case WRITER_ETCD_CUT -> {
                int p = random.nextInt(fleet.processes());
                long pid = fleet.pid(p);
                yield Optional.of(fromEtcd(name, "writer-" + p, pid));
            }
            case ENFORCER_ETCD_CUT -> {
                int i = running(stack.enforcerUrls().size(), stack::enforcerAlive, random, "enforcer");
                yield Optional.of(fromEtcd(name, "enforcer-" + i, stack.enforcerPid(i)));
            }
            case ENFORCER_KAFKA_CUT -> {
                int i = running(stack.enforcerUrls().size(), stack::enforcerAlive, random, "enforcer");
                yield Optional.of(fromBrokers(name, "enforcer-" + i, stack.enforcerPid(i)));
            }
            case CONNECT_KAFKA_CUT -> {
                int i = running(stack.connectUrls().size(), stack::connectAlive, random, "Connect worker");
                yield Optional.of(fromBrokers(name, "connect-" + i, stack.connectPid(i)));
            }
            case ETCD_MEMBER_CUT -> Optional.of(etcdMember(name, random));
            case BROKER_CUT -> Optional.of(broker(name, random.nextInt(stack.brokerCount())));
            case SLOW_LINK -> Optional.of(slow(name, random, fleet));
            default -> throw new IllegalArgumentException(fault.option() + " is not a network fault");
        };
    }

    /** Ends the fault: removes its rules. */
    public void end(Cut cut) {
        links.heal(cut.name());
    }

    /** Cuts process {@code pid} (named {@code who} in the detail) from every etcd member; it still reaches the rest. */
    public Cut fromEtcd(String name, String who, long pid) {
        return cut(name, who, pid, etcdPids(), "etcd");
    }

    /** Cuts process {@code pid} (named {@code who} in the detail) from every broker; it still reaches the rest. */
    public Cut fromBrokers(String name, String who, long pid) {
        return cut(name, who, pid, IntStream.range(0, stack.brokerCount()).mapToObj(stack::brokerPid).toList(), "the brokers");
    }

    /**
     * Cuts {@code pid} from the processes {@code servers} both ways: what it sends to their listening ports, and what they
     * send on its open connections to them (a watch stream pushes events without being asked: cutting one way only would
     * leave it flowing). A connection it opens later cannot be set up, as its packets are dropped.
     */
    private Cut cut(String name, String from, long pid, List<Long> servers, String to) {
        NetworkLinks.Sockets sockets = NetworkLinks.sockets(); // one look: the cut begins at once, whatever the load
        List<Set<Integer>> listening = servers.stream().map(sockets::listening).toList();
        Set<Integer> ports = new TreeSet<>();
        listening.forEach(ports::addAll);
        // its own packets first: from here on it opens no new connection
        links.cut(name, NetworkLinks.groupOf(pid), ports);
        Set<Integer> local = new TreeSet<>();
        for (int s = 0; s < servers.size(); s++) {
            Set<Integer> open = sockets.connectionPorts(pid, listening.get(s));
            links.cut(name, NetworkLinks.groupOf(servers.get(s)), open);
            local.addAll(open);
        }
        return new Cut(name, from + " cut from " + to + " (ports " + ports + "; their packets to its ports " + local + ")");
    }

    /** A member cut from the others both ways: the leader half the time. */
    private Cut etcdMember(String name, Random random) throws InterruptedException {
        EtcdCluster etcd = etcd();
        return etcdMember(name, random.nextBoolean() ? etcd.leader() : random.nextInt(etcd.size()));
    }

    private EtcdCluster etcd() {
        return stack.etcdCluster().orElseThrow(() -> new IllegalStateException("etcd-member-cut needs --cluster"));
    }

    /**
     * Cuts etcd member {@code m} from the other members, both ways; clients still reach it.
     *
     * @throws IllegalStateException when the stack runs one etcd member
     */
    public Cut etcdMember(String name, int m) throws InterruptedException {
        EtcdCluster etcd = etcd();
        boolean leader = m == etcd.leader();
        NetworkLinks.Sockets sockets = NetworkLinks.sockets();
        Set<Integer> others = new TreeSet<>();
        for (int o = 0; o < etcd.size(); o++) {
            if (o != m) {
                others.addAll(sockets.listening(etcd.pid(o)));
                links.cut(name, NetworkLinks.groupOf(etcd.pid(o)), sockets.listening(etcd.pid(m)));
            }
        }
        links.cut(name, NetworkLinks.groupOf(etcd.pid(m)), others);
        return new Cut(name, "etcd member " + m + (leader ? " (the leader)" : "") + " cut from the other members");
    }

    /** Cuts broker {@code b} from the other brokers, both ways; clients still reach every broker. */
    public Cut broker(String name, int b) {
        NetworkLinks.Sockets sockets = NetworkLinks.sockets();
        for (int o = 0; o < stack.brokerCount(); o++) {
            if (o != b) {
                links.cut(name, NetworkLinks.groupOf(stack.brokerPid(o)), sockets.listening(stack.brokerPid(b)));
            }
        }
        links.cut(name, NetworkLinks.groupOf(stack.brokerPid(b)), brokerPorts(sockets, b));
        return new Cut(name, "broker-" + b + " cut from the other brokers");
    }

    /** A writer's, an enforcer's or a Connect worker's link to Kafka or etcd, dropping {@link #SLOW_LINK_LOSS}. */
    private Cut slow(String name, Random random, WriterFleet fleet) {
        int p = random.nextInt(fleet.processes());
        int i = random.nextInt(stack.enforcerUrls().size());
        int c = random.nextInt(stack.connectUrls().size());
        boolean toEtcd = random.nextBoolean();
        // only the process drawn must run now: a writer, an enforcer, or a Connect worker (whose link is always to Kafka)
        return switch (random.nextInt(3)) {
            case 0 -> slow(name, "writer-" + p, fleet.pid(p), toEtcd);
            case 1 -> {
                int e = running(stack.enforcerUrls().size(), stack::enforcerAlive, i, "enforcer");
                yield slow(name, "enforcer-" + e, stack.enforcerPid(e), toEtcd);
            }
            default -> {
                int w = running(stack.connectUrls().size(), stack::connectAlive, c, "Connect worker");
                yield slow(name, "connect-" + w, stack.connectPid(w), false);
            }
        };
    }

    /**
     * Makes process {@code pid}'s link to etcd ({@code toEtcd}) or to the brokers drop {@link #SLOW_LINK_LOSS} of its
     * packets: TCP resends each after at least 200 ms, doubling (this kernel has no netem to delay them instead).
     */
    public Cut slow(String name, String who, long pid, boolean toEtcd) {
        NetworkLinks.Sockets sockets = NetworkLinks.sockets();
        Set<Integer> ports = toEtcd ? etcdPorts(sockets) : brokerPorts(sockets, -1);
        links.lossy(name, NetworkLinks.groupOf(pid), ports, SLOW_LINK_LOSS);
        return new Cut(name, who + "'s link to " + (toEtcd ? "etcd" : "the brokers") + " dropping "
                + Math.round(SLOW_LINK_LOSS * 100) + " % of its packets (ports " + ports + ")");
    }

    /**
     * Makes process {@code pid}'s link to PostgreSQL drop {@code share} of its packets: a sink task's batch in hand is then
     * written slowly, past the moment its partitions move to another worker (a zombie sink task).
     */
    public Cut slowToPostgres(String name, String who, long pid, double share) {
        Set<Integer> ports = Set.of(postgresPort());
        links.lossy(name, NetworkLinks.groupOf(pid), ports, share);
        return new Cut(name, who + "'s link to PostgreSQL dropping " + Math.round(share * 100) + " % of its packets (port "
                + ports + ")");
    }

    /** The port PostgreSQL listens on, from the stack's JDBC URL. */
    public int postgresPort() {
        Matcher port = URL_PORT.matcher(stack.postgresUrl());
        if (!port.find()) {
            throw new IllegalStateException("no port in the stack's PostgreSQL URL " + stack.postgresUrl());
        }
        return Integer.parseInt(port.group(1));
    }

    /**
     * A running instance of {@code count}, from one drawn with {@code random} on: a kill's restart can take a minute.
     *
     * @throws IllegalStateException when none runs
     */
    private static int running(int count, IntPredicate alive, Random random, String what) {
        return running(count, alive, random.nextInt(count), what);
    }

    private static int running(int count, IntPredicate alive, int first, String what) {
        return IntStream.range(0, count).map(k -> (first + k) % count).filter(alive).findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + what + " is running"));
    }

    private Set<Integer> etcdPorts(NetworkLinks.Sockets sockets) {
        Set<Integer> ports = new TreeSet<>();
        etcdPids().forEach(pid -> ports.addAll(sockets.listening(pid)));
        return ports;
    }

    /** Every etcd member's process id. */
    private List<Long> etcdPids() {
        Optional<EtcdCluster> cluster = stack.etcdCluster();
        return cluster.isPresent()
                ? IntStream.range(0, cluster.get().size()).mapToObj(m -> cluster.get().pid(m)).toList()
                : List.of(stack.etcdPid());
    }

    /** Every broker's listening ports but broker {@code except}'s (-1: every broker's). */
    private Set<Integer> brokerPorts(NetworkLinks.Sockets sockets, int except) {
        Set<Integer> ports = new TreeSet<>();
        for (int b = 0; b < stack.brokerCount(); b++) {
            if (b != except) {
                ports.addAll(sockets.listening(stack.brokerPid(b)));
            }
        }
        return ports;
    }
}
