package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.services.NetworkLinks;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;

/**
 * {@code fence chaos}'s network faults on a stack it started: which process to cut from which, by {@link NetworkLinks}
 * rules on the processes' group ids and listening ports, read when each fault begins (a restart changes both).
 */
final class LinkFaults {
    /** The share of packets a slow link drops. */
    static final double SLOW_LINK_LOSS = 0.25;

    private final LocalStack stack;
    private final NetworkLinks links;

    /**
     * One link fault in progress.
     *
     * @param name   the link's name in {@link NetworkLinks}
     * @param detail what was cut, for the report: {@code writer-2 cut from etcd (ports 2379, 2380)}
     */
    record Cut(String name, String detail) {
    }

    LinkFaults(LocalStack stack, NetworkLinks links) {
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
                yield Optional.of(cut(name, "writer-" + p, pid, etcdPorts(), "etcd"));
            }
            case ENFORCER_ETCD_CUT -> {
                int i = running(stack.enforcerUrls().size(), stack::enforcerAlive, random, "enforcer");
                yield Optional.of(cut(name, "enforcer-" + i, stack.enforcerPid(i), etcdPorts(), "etcd"));
            }
            case ENFORCER_KAFKA_CUT -> {
                int i = running(stack.enforcerUrls().size(), stack::enforcerAlive, random, "enforcer");
                yield Optional.of(cut(name, "enforcer-" + i, stack.enforcerPid(i), brokerPorts(-1), "the brokers"));
            }
            case CONNECT_KAFKA_CUT -> {
                int i = running(stack.connectUrls().size(), stack::connectAlive, random, "Connect worker");
                yield Optional.of(cut(name, "connect-" + i, stack.connectPid(i), brokerPorts(-1), "the brokers"));
            }
            case ETCD_MEMBER_CUT -> Optional.of(etcdMember(name, random));
            case BROKER_CUT -> Optional.of(broker(name, random));
            case SLOW_LINK -> Optional.of(slow(name, random, fleet));
            default -> throw new IllegalArgumentException(fault.option() + " is not a network fault");
        };
    }

    /** Ends the fault: removes its rules. */
    void end(Cut cut) {
        links.heal(cut.name());
    }

    private Cut cut(String name, String from, long pid, Set<Integer> ports, String to) {
        links.cut(name, NetworkLinks.groupOf(pid), ports);
        return new Cut(name, from + " cut from " + to + " (ports " + ports + ")");
    }

    /** Member {@code m} cut from the others both ways: the leader half the time. */
    private Cut etcdMember(String name, Random random) throws InterruptedException {
        EtcdCluster etcd = stack.etcdCluster().orElseThrow(() -> new IllegalStateException("etcd-member-cut needs --cluster"));
        boolean leader = random.nextBoolean();
        int m = leader ? etcd.leader() : random.nextInt(etcd.size());
        Set<Integer> others = new TreeSet<>();
        for (int o = 0; o < etcd.size(); o++) {
            if (o != m) {
                others.addAll(NetworkLinks.listeningPorts(etcd.pid(o)));
                links.cut(name, NetworkLinks.groupOf(etcd.pid(o)), NetworkLinks.listeningPorts(etcd.pid(m)));
            }
        }
        links.cut(name, NetworkLinks.groupOf(etcd.pid(m)), others);
        return new Cut(name, "etcd member " + m + (leader ? " (the leader)" : "") + " cut from the other members");
    }

    /** Broker {@code b} cut from the other brokers both ways; clients still reach every broker. */
    private Cut broker(String name, Random random) {
        int b = random.nextInt(stack.brokerCount());
        for (int o = 0; o < stack.brokerCount(); o++) {
            if (o != b) {
                links.cut(name, NetworkLinks.groupOf(stack.brokerPid(o)), NetworkLinks.listeningPorts(stack.brokerPid(b)));
            }
        }
        links.cut(name, NetworkLinks.groupOf(stack.brokerPid(b)), brokerPorts(b));
        return new Cut(name, "broker-" + b + " cut from the other brokers");
    }

    /** A writer's, an enforcer's or a Connect worker's link to Kafka or etcd, dropping {@link #SLOW_LINK_LOSS}. */
    private Cut slow(String name, Random random, WriterFleet fleet) {
        List<String> who = new ArrayList<>();
        List<Long> pids = new ArrayList<>();
        int p = random.nextInt(fleet.processes());
        who.add("writer-" + p);
        pids.add(fleet.pid(p));
        int i = running(stack.enforcerUrls().size(), stack::enforcerAlive, random, "enforcer");
        who.add("enforcer-" + i);
        pids.add(stack.enforcerPid(i));
        int c = running(stack.connectUrls().size(), stack::connectAlive, random, "Connect worker");
        who.add("connect-" + c);
        pids.add(stack.connectPid(c));
        int pick = random.nextInt(who.size());
        // Connect does not talk to etcd: its slow link is always to Kafka
        boolean toEtcd = pick != 2 && random.nextBoolean();
        Set<Integer> ports = toEtcd ? etcdPorts() : brokerPorts(-1);
        links.lossy(name, NetworkLinks.groupOf(pids.get(pick)), ports, SLOW_LINK_LOSS);
        return new Cut(name, who.get(pick) + "'s link to " + (toEtcd ? "etcd" : "the brokers") + " dropping "
                + Math.round(SLOW_LINK_LOSS * 100) + " % of its packets (ports " + ports + ")");
    }

    /**
     * A running instance of {@code count}, from one drawn with {@code random} on: a kill's restart can take a minute.
     *
     * @throws IllegalStateException when none runs
     */
    private static int running(int count, IntPredicate alive, Random random, String what) {
        int first = random.nextInt(count);
        return IntStream.range(0, count).map(k -> (first + k) % count).filter(alive).findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + what + " is running"));
    }

    private Set<Integer> etcdPorts() {
        Set<Integer> ports = new TreeSet<>();
        Optional<EtcdCluster> cluster = stack.etcdCluster();
        if (cluster.isPresent()) {
            IntStream.range(0, cluster.get().size())
                    .forEach(m -> ports.addAll(NetworkLinks.listeningPorts(cluster.get().pid(m))));
        } else {
            ports.addAll(NetworkLinks.listeningPorts(stack.etcdPid()));
        }
        return ports;
    }

    /** Every broker's listening ports but broker {@code except}'s (-1: every broker's). */
    private Set<Integer> brokerPorts(int except) {
        Set<Integer> ports = new TreeSet<>();
        for (int b = 0; b < stack.brokerCount(); b++) {
            if (b != except) {
                ports.addAll(NetworkLinks.listeningPorts(stack.brokerPid(b)));
            }
        }
        return ports;
    }
}
