package dev.fencedwrites.services;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Cuts and degrades TCP links between local processes for fault runs, without touching the rest: iptables rules in a chain
 * of this JVM's own, each dropping the packets that one process sends to another's listening ports. The sender is matched
 * by its group id (iptables' {@code owner} match), which {@link ChildProcess#ownGroupEach()} makes unique per child.
 *
 * <p>Dropping what the connecting side sends cuts the whole connection, as a partition would: nothing it sends arrives and
 * nothing it receives is acknowledged, so both ends time out. A cut between two servers (etcd members, brokers) drops
 * each one's packets to the other's ports. A lossy link drops a random share of the packets (iptables' {@code statistic}
 * match): TCP resends each after at least 200 ms (Linux's minimum retransmission timeout), doubling on every repeat, so
 * data arrives late, in bursts and out of wall-clock order across connections. This kernel has no {@code netem}, so delay
 * is made by loss.
 *
 * <p>Needs root, iptables with the owner and statistic matches, setpriv and ss; {@link #unavailable()} says what is
 * missing. Not thread-safe for the same link name; {@link #close()} removes every rule and the chain.
 */
public final class NetworkLinks implements AutoCloseable {
    private static final String CHAIN_PREFIX = "FENCED-WRITES-";
    /** An {@code ss -H -t -a -n} line: state, queues, local address:port, then the peer's ({@code *} when listening). */
    private static final Pattern SOCKET = Pattern.compile("^(\\S+)\\s+\\d+\\s+\\d+\\s+\\S+:(\\d+)\\s+\\S+:(\\d+|\\*)(\\s|$)");
    private static final Pattern PID = Pattern.compile("pid=(\\d+)");

    private final String chain;
    private final Map<String, List<List<String>>> links = new LinkedHashMap<>();

    private NetworkLinks(String chain) {
        this.chain = chain;
    }

    /**
     * Why links cannot be cut on this machine, or empty when they can: not root, a tool missing, or a rule the kernel
     * refuses (tried in a chain created and removed again).
     */
    public static Optional<String> unavailable() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return Optional.of("network faults need root (iptables), and this runs as " + System.getProperty("user.name"));
        }
        for (String tool : List.of("iptables", "setpriv", "ss")) {
            if (program(tool).isEmpty()) {
                return Optional.of("network faults need " + tool + ", which is not on PATH or in /usr/sbin");
            }
        }
        String probe = CHAIN_PREFIX + "PROBE-" + ProcessHandle.current().pid();
        try {
            iptables("-N", probe);
            try {
                iptables("-A", probe, "-p", "tcp", "-m", "owner", "--gid-owner", "1", "-m", "statistic", "--mode", "random",
                        "--probability", "0.5", "-j", "DROP");
            } finally {
                iptables("-F", probe);
                iptables("-X", probe);
            }
            return Optional.empty();
        } catch (IllegalStateException e) {
            return Optional.of("network faults need iptables' owner and statistic matches: " + e.getMessage());
        }
    }

    /**
     * Creates this JVM's chain and sends every locally sent packet through it; first removes the chains of JVMs that are
     * gone (a run killed before its {@link #close()}).
     *
     * @throws IllegalStateException if iptables refuses (see {@link #unavailable()})
     */
    public static NetworkLinks open() {
        removeStaleChains();
        NetworkLinks links = new NetworkLinks(CHAIN_PREFIX + ProcessHandle.current().pid());
        iptables("-N", links.chain);
        iptables("-I", "OUTPUT", "-j", links.chain);
        return links;
    }

    /** The group id a running process sends with (its effective one, from /proc), which the rules match. */
    public static int groupOf(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"), StandardCharsets.UTF_8)) {
                if (line.startsWith("Gid:")) {
                    return Integer.parseInt(line.substring(4).trim().split("\\s+")[1]);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("process " + pid + " is gone: " + e.getMessage(), e);
        }
        throw new IllegalStateException("/proc/" + pid + "/status has no Gid line");
    }

    /** The TCP ports that {@code pid} (or a process it started) listens on, from {@code ss}: {@link #sockets()} once. */
    public static Set<Integer> listeningPorts(long pid) {
        return sockets().listening(pid);
    }

    /**
     * The local ports of the established TCP connections that process {@code pid} (or a descendant) holds to
     * {@code remotePort}: {@link #sockets()} once.
     */
    public static Set<Integer> connectionPorts(long pid, int remotePort) {
        return sockets().connectionPorts(pid, Set.of(remotePort));
    }

    /**
     * Every TCP socket of this machine now with its owners, from one {@code ss -t -a -n -p} (which walks every process's
     * open files: on a loaded machine a run can take a second, so a fault that needs several answers asks once).
     */
    public static Sockets sockets() {
        List<TcpSocket> sockets = new ArrayList<>();
        for (String line : run(List.of(program("ss").orElseThrow().toString(), "-H", "-t", "-a", "-n", "-p")).split("\n")) {
            Matcher socket = SOCKET.matcher(line.trim());
            if (socket.find()) {
                Set<Long> owners = new HashSet<>();
                Matcher owner = PID.matcher(line);
                while (owner.find()) {
                    owners.add(Long.parseLong(owner.group(1)));
                }
                sockets.add(new TcpSocket(socket.group(1), Integer.parseInt(socket.group(2)),
                        "*".equals(socket.group(3)) ? -1 : Integer.parseInt(socket.group(3)), owners));
            }
        }
        return new Sockets(List.copyOf(sockets));
    }

    /** One TCP socket: its state ({@code LISTEN}, {@code ESTAB}, ...), local and peer port (-1: none), owning processes. */
    record TcpSocket(String state, int localPort, int peerPort, Set<Long> owners) {
        boolean ownedBy(Set<Long> pids) {
            return owners.stream().anyMatch(pids::contains);
        }
    }

    /** A snapshot of the machine's TCP sockets ({@link #sockets()}), to ask about several processes at once. */
    public static final class Sockets {
        private final List<TcpSocket> sockets;

        private Sockets(List<TcpSocket> sockets) {
            this.sockets = sockets;
        }

        /** The ports that {@code pid} (or a process it started) listens on. */
        public Set<Integer> listening(long pid) {
            Set<Long> pids = withDescendants(pid);
            return sockets.stream().filter(s -> "LISTEN".equals(s.state()) && s.ownedBy(pids)).map(TcpSocket::localPort)
                    .collect(Collectors.toCollection(TreeSet::new));
        }

        /**
         * The local ports of the established connections that {@code pid} (or a descendant) holds to any of
         * {@code remotePorts}: which connections in a server's view (PostgreSQL's {@code inet_client_port()}) are its.
         */
        public Set<Integer> connectionPorts(long pid, Collection<Integer> remotePorts) {
            Set<Long> pids = withDescendants(pid);
            return sockets.stream()
                    .filter(s -> "ESTAB".equals(s.state()) && remotePorts.contains(s.peerPort()) && s.ownedBy(pids))
                    .map(TcpSocket::localPort).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static Set<Long> withDescendants(long pid) {
        Set<Long> pids = ProcessHandle.of(pid).map(p -> p.descendants().map(ProcessHandle::pid).collect(Collectors.toSet()))
                .orElseGet(HashSet::new);
        pids.add(pid);
        return pids;
    }

    /**
     * Drops every TCP packet that processes of group {@code group} send to {@code ports}, until {@link #heal(String)} of
     * {@code link}; several calls under one link name add up.
     *
     * @param link  a name for the fault, e.g. {@code writer-2|etcd}
     * @param group the sender's group id ({@link #groupOf})
     * @param ports the receivers' listening ports; an empty set adds nothing
     */
    public synchronized void cut(String link, int group, Collection<Integer> ports) {
        add(link, group, ports, List.of());
    }

    /**
     * Drops a random {@code share} (0 to 1) of the TCP packets that group {@code group} sends to {@code ports}: a slow,
     * jittery link (see the class comment), until {@link #heal(String)}.
     */
    public synchronized void lossy(String link, int group, Collection<Integer> ports, double share) {
        if (!(share > 0 && share < 1)) {
            throw new IllegalArgumentException("a lossy link drops a share between 0 and 1 of its packets, not " + share);
        }
        add(link, group, ports, List.of("-m", "statistic", "--mode", "random", "--probability",
                String.format(Locale.ROOT, "%.3f", share)));
    }

    /** Removes the rules of {@code link}; nothing when it has none. */
    public synchronized void heal(String link) {
        List<List<String>> rules = links.getOrDefault(link, List.of());
        IllegalStateException failed = null;
        for (List<String> rule : List.copyOf(rules)) {
            List<String> delete = new ArrayList<>(List.of("-D", chain));
            delete.addAll(rule);
            try {
                iptables(delete.toArray(String[]::new));
                rules.remove(rule);
            } catch (IllegalStateException e) {
                failed = e; // the others are deleted all the same; this one stays listed, and close() removes it
            }
        }
        if (rules.isEmpty()) {
            links.remove(link);
        }
        if (failed != null) {
            throw failed;
        }
    }

    /** The links cut or lossy now, by name. */
    public synchronized Set<String> active() {
        return Set.copyOf(links.keySet());
    }

    /** Heals every link, then removes the chain and its jump from OUTPUT. */
    @Override
    public synchronized void close() {
        links.clear();
        removeChain(chain);
    }

    private void add(String link, int group, Collection<Integer> ports, List<String> match) {
        List<Integer> sorted = List.copyOf(new TreeSet<>(ports));
        // multiport takes at most 15 ports per rule
        for (int from = 0; from < sorted.size(); from += 15) {
            String list = sorted.subList(from, Math.min(sorted.size(), from + 15)).stream().map(String::valueOf)
                    .collect(Collectors.joining(","));
            List<String> rule = new ArrayList<>(List.of("-p", "tcp", "-m", "owner", "--gid-owner", Integer.toString(group),
                    "-m", "multiport", "--dports", list));
            rule.addAll(match);
            rule.addAll(List.of("-j", "DROP"));
            List<String> append = new ArrayList<>(List.of("-A", chain));
            append.addAll(rule);
            iptables(append.toArray(String[]::new));
            links.computeIfAbsent(link, name -> new ArrayList<>()).add(rule);
        }
    }

    private static void removeStaleChains() {
        for (String line : run(List.of(program("iptables").orElseThrow().toString(), "-w", "10", "-S")).split("\n")) {
            if (line.startsWith("-N " + CHAIN_PREFIX)) {
                String name = line.substring(3).trim();
                String owner = name.substring(CHAIN_PREFIX.length());
                if (owner.matches("\\d+") && ProcessHandle.of(Long.parseLong(owner)).isEmpty()) {
                    removeChain(name);
                }
            }
        }
    }

    private static void removeChain(String name) {
        try {
            iptables("-D", "OUTPUT", "-j", name);
        } catch (IllegalStateException notThere) {
            // already unhooked
        }
        iptables("-F", name);
        iptables("-X", name);
    }

    private static void iptables(String... args) {
        List<String> command = new ArrayList<>(List.of(program("iptables").orElseThrow(
                () -> new MissingToolException("iptables", "apt-get install -y iptables")).toString(), "-w", "10"));
        command.addAll(List.of(args));
        run(command);
    }

    private static Optional<Path> program(String name) {
        return Tools.onPath(name).or(() -> Optional.of(Path.of("/usr/sbin", name)).filter(Files::isExecutable));
    }

    private static String run(List<String> command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed: " + out.trim());
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command.get(0) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + command.get(0), e);
        }
    }
}
