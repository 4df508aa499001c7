package dev.fencedwrites.devtools.chaos;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.stream.IntStream;

/**
 * {@code fence chaos}'s nemesis: injects faults into a running stack and its writers on a schedule drawn from a
 * seed, so a run's sequence of faults (which, in what order, on which process, for how long) is the same for the same seed.
 * Every chosen fault happens at least once when the run is long enough: the schedule starts with each of them once, in an
 * order drawn from the seed, then draws from them at random. A fault that could not happen at its first turn (no writer
 * running to pause, no skewed writer) gets it again later, up to 3 times; that shifts the rest of the run's schedule, so a
 * seed gives the same schedule only as long as every first turn could happen. The network faults ({@link Fault#network()})
 * run on a second schedule from the same seed ({@link #cutLinks}), overlapping the first and each other.
 */
final class Nemesis {
    private final ServiceFaults services;
    private final WriterFleet fleet;
    private final Injector injector;
    /** The process faults (signals, restarts, clocks, injected records), one at a time. */
    private final List<Fault> faults;
    /** The network faults, on a schedule of their own: they overlap each other and the process faults. */
    private final List<Fault> linkFaults;
    /** Where the network faults land; {@code null} when none can (a stack chaos did not start, no root). */
    private final LinkFaults links;
    private final Random linkSchedule;
    private final List<Future<?>> cuts = new CopyOnWriteArrayList<>();
    /** How often a fault's first time is tried again when it could not happen (no running writer, no skewed one). */
    private static final int FIRST_TIME_RETRIES = 3;
    private final Random random;
    /** Separate from the schedule's: what is injected depends on what the writers did, the schedule must not. */
    private final Random injections;
    private final Duration ttl;
    private final Consumer<String> progress;
    private final List<Event> events = new CopyOnWriteArrayList<>();
    /** Restarts in progress, by component ({@code enforcer-0}): a kill's restart runs while the schedule goes on. */
    private final Map<String, Future<?>> restarting = new HashMap<>();
    private final ExecutorService background = Executors.newCachedThreadPool();

    /**
     * One fault as it happened.
     *
     * @param startMillis when it began (wall clock, ms)
     * @param endMillis   when it ended: resumed, restarted, or the same as the start for an instant fault
     * @param detail      what exactly, e.g. {@code writer-2 stopped for 4500 ms}
     */
    record Event(long startMillis, long endMillis, Fault fault, String detail) {
    }

    /** @param links where the network faults among {@code faults} land; {@code null} when there are none */
    Nemesis(ServiceFaults services, LinkFaults links, WriterFleet fleet, Injector injector, Set<Fault> faults, long seed,
            Duration ttl, Consumer<String> progress) {
        this.services = services;
        this.links = links;
        this.fleet = fleet;
        this.injector = injector;
        this.faults = faults.stream().filter(f -> !f.network()).sorted().toList();
        this.linkFaults = links == null ? List.of() : faults.stream().filter(Fault::network).sorted().toList();
        this.linkSchedule = new Random(seed * 17 + 3);
        this.random = new Random(seed);
        this.injections = new Random(seed * 31 + 7);
        this.ttl = ttl;
        this.progress = progress;
    }

    /** Injects faults until {@code duration} has passed (a restart may still be in progress then: {@link #settle()}). */
    void run(Duration duration) throws Exception {
        long deadline = System.currentTimeMillis() + duration.toMillis();
        Future<?> network = linkFaults.isEmpty() ? null : background.submit(() -> {
            cutLinks(deadline);
            return null;
        });
        schedule(duration);
        if (network != null) {
            network.get();
        }
    }

    /**
     * Network faults until {@code deadline}: every 1-3 s the next kind in an order drawn from the seed begins, unless its
     * last one still runs (its turn passes), so each kind happens about as often as the others and they overlap.
     */
    private void cutLinks(long deadline) throws InterruptedException {
        List<Fault> order = new ArrayList<>(linkFaults);
        Collections.shuffle(order, linkSchedule);
        Map<Fault, Future<?>> last = new HashMap<>();
        for (int turn = 0;; turn++) {
            long wait = 1_000 + linkSchedule.nextInt(2_000);
            if (deadline - System.currentTimeMillis() < wait + 1_000) {
                return;
            }
            Thread.sleep(wait);
            Fault fault = order.get(turn % order.size());
            long length = linkLength(fault);
            Random draw = new Random(linkSchedule.nextLong()); // which process: from the seed, whatever else ran
            Future<?> previous = last.get(fault);
            if (previous == null || previous.isDone()) {
                String name = fault.option() + "-" + turn;
                Future<?> cut = background.submit(() -> {
                    cutLink(fault, name, draw, length);
                    return null;
                });
                last.put(fault, cut);
                cuts.add(cut);
            }
        }
    }

    /** How long a network fault lasts, in ms: a writer's cut from etcd outlasts its lease. */
    private long linkLength(Fault fault) {
        return switch (fault) {
            case WRITER_ETCD_CUT -> ttl.toMillis() + 500 + linkSchedule.nextInt((int) ttl.toMillis() + 1);
            case ENFORCER_ETCD_CUT, ETCD_MEMBER_CUT -> 2_000 + linkSchedule.nextInt(6_000);
            case ENFORCER_KAFKA_CUT -> 3_000 + linkSchedule.nextInt(9_000);
            case CONNECT_KAFKA_CUT -> 5_000 + linkSchedule.nextInt(7_000);
            case BROKER_CUT -> 3_000 + linkSchedule.nextInt(7_000);
            default -> 4_000 + linkSchedule.nextInt(6_000); // slow-link
        };
    }

    private void cutLink(Fault fault, String name, Random draw, long length) throws InterruptedException {
        LinkFaults.Cut cut;
        try {
            cut = links.begin(fault, name, draw, fleet).orElse(null);
        } catch (RuntimeException e) {
            // the process is being restarted (its /proc entry is gone), or iptables refused: this turn did not happen
            progress.accept(String.format("%-15s did not happen: %s", fault.option(), e.getMessage()));
            links.end(new LinkFaults.Cut(name, ""));
            return;
        }
        if (cut == null) {
            return;
        }
        long start = System.currentTimeMillis();
        try {
            Thread.sleep(length);
        } finally {
            links.end(cut);
        }
        done(new Event(start, System.currentTimeMillis(), fault, cut.detail() + " for " + length + " ms"));
    }

    /** Waits for the restarts in progress; returns every fault that happened, in order. */
    List<Event> settle() throws Exception {
        try {
            for (Future<?> restart : restarting.values()) {
                restart.get();
            }
            for (Future<?> cut : cuts) {
                cut.get();
            }
        } finally {
            background.shutdownNow();
        }
        List<Event> ordered = new ArrayList<>(events);
        ordered.sort(Comparator.comparingLong(Event::startMillis));
        return ordered;
    }

    private void schedule(Duration duration) throws Exception {
        long deadline = System.currentTimeMillis() + duration.toMillis();
        List<Fault> first = new ArrayList<>(faults);
        Map<Fault, Integer> retries = new HashMap<>();
        Collections.shuffle(first, random);
        while (!faults.isEmpty()) {
            long left = deadline - System.currentTimeMillis();
            long gap = Math.max(1_000, Math.min(8_000, left / (first.size() + 2)));
            long wait = gap / 2 + (long) (random.nextDouble() * gap / 2);
            if (left < wait + 1_000) {
                break;
            }
            Thread.sleep(wait);
            boolean firstTime = !first.isEmpty();
            Fault fault = firstTime ? first.remove(0) : faults.get(random.nextInt(faults.size()));
            Event event = inject(fault);
            if (event != null) {
                done(event);
            } else if (firstTime && !recordedLater(fault) && retries.merge(fault, 1, Integer::sum) <= FIRST_TIME_RETRIES) {
                // It could not happen now (every writer already stopped at a stall, say): its first time comes again later,
                // so that each chosen fault still happens at least once (a ChaosIT run once had no worker-pause).
                first.add(fault);
            }
        }
    }

    /** Whether {@link #inject} records the fault's event later, when a restart in the background is done. */
    private static boolean recordedLater(Fault fault) {
        return fault == Fault.ENFORCER_KILL || fault == Fault.CONNECT_KILL || fault == Fault.BROKER_KILL;
    }

    private void done(Event event) {
        events.add(event);
        progress.accept(String.format("%-15s %s", event.fault().option(), event.detail()));
    }

    /** Waits for {@code component}'s restart in progress, if any. */
    private void settle(String component) throws Exception {
        Future<?> restart = restarting.remove(component);
        if (restart != null) {
            restart.get();
        }
    }

    /**
     * Kills an instance now and restarts it in the background; the fault's event is recorded once it is back. A kill waits
     * for the restart in progress of the same kind (brokers: any broker, so one is down at a time) or instance.
     */
    private Event kill(Fault fault) throws Exception {
        int i = random.nextInt(services.instances(fault));
        String name = switch (fault) {
            case ENFORCER_KILL -> "enforcer-" + i;
            case CONNECT_KILL -> "connect-" + i;
            default -> "broker-" + i;
        };
        // One broker down at a time: with min.insync.replicas 2 of 3, a second one would stop every produce.
        String group = fault == Fault.BROKER_KILL ? "broker" : name;
        long down = 500 + random.nextInt(2_000);
        settle(group);
        long start = System.currentTimeMillis();
        services.begin(fault, i, down);
        restarting.put(group, background.submit(() -> {
            Thread.sleep(down);
            services.end(fault, i);
            done(new Event(start, System.currentTimeMillis(), fault, name + " killed (SIGKILL); back after "
                    + (System.currentTimeMillis() - start) + " ms"));
            return null;
        }));
        return null;
    }

    /**
     * Stops an enforcer instance for 2-8 s, or etcd (in a cluster, a member) for 1-5 s; the event starts once a restart of
     * the same enforcer in progress is done.
     */
    private Event pause(Fault fault) throws Exception {
        int i = random.nextInt(services.instances(fault));
        boolean enforcer = fault == Fault.ENFORCER_PAUSE;
        long length = enforcer ? 2_000 + random.nextInt(6_000) : 1_000 + random.nextInt(4_000);
        String name = enforcer ? "enforcer-" + i : services.instances(fault) > 1 ? "etcd member " + i : "etcd";
        if (enforcer) {
            settle(name);
        }
        long start = System.currentTimeMillis();
        services.begin(fault, i, length);
        try {
            Thread.sleep(length);
        } finally {
            services.end(fault, i);
        }
        return new Event(start, System.currentTimeMillis(), fault, name + " stopped for " + length + " ms");
    }

    /** Injects one fault; returns its event, or {@code null} when it is recorded later (a restart in the background). */
    private Event inject(Fault fault) throws Exception {
        long start = System.currentTimeMillis();
        Object detail = switch (fault) {
            case WORKER_PAUSE -> {
                int first = random.nextInt(fleet.processes());
                long length = ttl.toMillis() + 500 + random.nextInt((int) ttl.toMillis() + 1);
                // The first process from a random one that is running (not stopped at a stall already); none: no event.
                yield IntStream.range(0, fleet.processes()).map(k -> (first + k) % fleet.processes())
                        .filter(p -> fleet.pause(p, Duration.ofMillis(length))).mapToObj(
                                p -> (Object) ("writer-" + p + " stopped for " + length + " ms"))
                        .findFirst().orElse(null);
            }
            case WORKER_KILL -> {
                int p = random.nextInt(fleet.processes());
                fleet.kill(p);
                yield "writer-" + p + " killed and started again";
            }
            case ENFORCER_KILL, CONNECT_KILL, BROKER_KILL -> kill(fault);
            case ENFORCER_PAUSE, ETCD_PAUSE -> pause(fault);
            case CLOCK_JUMP -> clockJump();
            case INJECT -> String.join("; ", injector.inject(injections, fleet.keys(), fleet.ledger()));
            default -> throw new IllegalArgumentException(fault.option() + " is a network fault: cutLinks runs it");
        };
        if (detail instanceof Event event) {
            return event;
        }
        return detail == null ? null : new Event(start, System.currentTimeMillis(), fault, detail.toString());
    }

    /** Jumps a skewed writer's clock; {@code null} when no writer runs under libfaketime (no event). */
    private String clockJump() throws Exception {
        List<Integer> skewed = IntStream.range(0, fleet.processes()).filter(fleet::skewed).boxed().toList();
        if (skewed.isEmpty()) {
            return null; // no writer runs under libfaketime: the fault did not happen, and is not recorded
        }
        int p = skewed.get(random.nextInt(skewed.size()));
        String offset = (random.nextBoolean() ? "+" : "-") + (5 + random.nextInt(300)) + "s";
        fleet.setClock(p, offset);
        return "writer-" + p + "'s wall clock set to " + offset + " from the real one";
    }
}
