package dev.fencedwrites.devtools.chaos;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/** The faults {@code fence chaos}'s nemesis injects, by their {@code --faults} names. */
public enum Fault {
    /** SIGSTOP of a whole writer process for longer than its lease TTL, then SIGCONT. */
    WORKER_PAUSE("a writer process stopped (SIGSTOP) past its lease TTL"),
    /** SIGKILL of a writer process, and a new one in its place. */
    WORKER_KILL("a writer process killed (SIGKILL) and started again"),
    /** SIGKILL of the enforcer, and a restart. */
    ENFORCER_KILL("the enforcer killed (SIGKILL) and restarted"),
    /** SIGSTOP of the enforcer for a few seconds. */
    ENFORCER_PAUSE("the enforcer stopped (SIGSTOP) for a few seconds"),
    /** SIGKILL of the Connect worker, and a restart. */
    CONNECT_KILL("the Connect worker killed (SIGKILL) and restarted"),
    /** SIGSTOP of etcd (in a cluster, of one member) for a few seconds: keep-alives and token checks wait. */
    ETCD_PAUSE("etcd or one member stopped (SIGSTOP) a few seconds"),
    /** SIGKILL of one Kafka broker, and a restart; a clustered stack only (the default stack has one). */
    BROKER_KILL("a Kafka broker killed (SIGKILL) and restarted"),
    /** A jump of a skewed writer's wall clock (libfaketime), forwards or backwards. */
    CLOCK_JUMP("a writer's wall clock jumped (libfaketime)"),
    /** Forged, borrowed, stale and duplicate records from a non-Java client (kcat). */
    INJECT("forged, borrowed, stale and duplicate records sent with kcat"),
    /** A writer process cut from etcd past its lease TTL while it still reaches Kafka: the zombie writer. */
    WRITER_ETCD_CUT("a writer cut from etcd past its lease TTL, still reaching Kafka"),
    /** An enforcer instance cut from etcd: its token checks wait. */
    ENFORCER_ETCD_CUT("an enforcer cut from etcd"),
    /** An enforcer instance cut from every broker: its tasks may move, and a zombie's transaction is fenced. */
    ENFORCER_KAFKA_CUT("an enforcer cut from the brokers"),
    /** A Connect worker cut from every broker while it still reaches PostgreSQL: its tasks may move. */
    CONNECT_KAFKA_CUT("a Connect worker cut from the brokers, still reaching PostgreSQL"),
    /** One etcd member cut from the others (half the time the leader); a clustered stack only. */
    ETCD_MEMBER_CUT("an etcd member cut from the other members, the leader half the time"),
    /** One broker cut from the other brokers; a clustered stack only. */
    BROKER_CUT("a broker cut from the other brokers"),
    /** A link that drops a quarter of its packets: TCP resends them 200 ms or more later. */
    SLOW_LINK("a link to Kafka or etcd dropping 25 % of its packets (writer, enforcer or Connect)");

    private final String description;

    Fault(String description) {
        this.description = description;
    }

    /** Whether the fault hits a service of the pipeline (the enforcer, Connect, etcd, a broker), not the writers. */
    public boolean service() {
        return switch (this) {
            case ENFORCER_KILL, ENFORCER_PAUSE, CONNECT_KILL, ETCD_PAUSE, BROKER_KILL -> true;
            default -> false;
        };
    }

    /** Whether the fault cuts or degrades network links ({@code NetworkLinks}): a stack chaos started itself only. */
    public boolean network() {
        return ordinal() >= WRITER_ETCD_CUT.ordinal();
    }

    /** Whether the fault needs a clustered stack: several brokers or etcd members. */
    public boolean clusterOnly() {
        return this == BROKER_KILL || this == ETCD_MEMBER_CUT || this == BROKER_CUT;
    }

    /** The name on the command line: {@code worker-pause}. */
    public String option() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    public String description() {
        return description;
    }

    /** Every fault's option name, comma-separated. */
    public static String all() {
        return Arrays.stream(values()).map(Fault::option).collect(Collectors.joining(","));
    }

    /** The faults a stack can take: all of them in a cluster, all but the {@link #clusterOnly()} ones on the default stack. */
    public static String all(boolean cluster) {
        return Arrays.stream(values()).filter(f -> cluster || !f.clusterOnly()).map(Fault::option)
                .collect(Collectors.joining(","));
    }

    /**
     * Parses {@code worker-pause,enforcer-kill}.
     *
     * @throws IllegalArgumentException naming the unknown fault and the known ones
     */
    public static Set<Fault> parse(String list) {
        Set<Fault> faults = EnumSet.noneOf(Fault.class);
        for (String name : list.split(",")) {
            String wanted = name.trim();
            faults.add(Arrays.stream(values()).filter(f -> f.option().equals(wanted)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("unknown fault '" + wanted + "'; the faults are " + all())));
        }
        return faults;
    }
}
