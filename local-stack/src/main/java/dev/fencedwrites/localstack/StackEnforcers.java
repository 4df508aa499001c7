package dev.fencedwrites.localstack;

import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.FreePorts;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The stack's enforcer instances: one application id, each with its own directory ({@code enforcer} for the first,
 * {@code enforcer-<i>} for the others) and HTTP port, both kept across {@link #restart}, so its state directory and URL
 * stay the same.
 */
final class StackEnforcers implements AutoCloseable {
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(30);

    private final Path dir;
    private final Path log4j2;
    private final String bootstrap;
    private final Map<String, String> settings;
    private final int[] ports;
    private final Service[] services;
    private final InstanceStarts<Service> starts;

    StackEnforcers(Path dir, Path log4j2, String bootstrap, int count, Map<String, String> settings) {
        this.dir = dir;
        this.log4j2 = log4j2;
        this.bootstrap = bootstrap;
        this.settings = Map.copyOf(settings);
        this.ports = new int[count];
        this.services = new Service[count];
        this.starts = new InstanceStarts<>("enforcer", count);
        for (int i = 0; i < count; i++) {
            ports[i] = FreePorts.pick();
        }
    }

    /**
     * Starts instance {@code i} and returns when its {@code /health/ready} answers 200. The wait holds no lock, so that
     * {@link #alive} and {@link #pid} answer for every instance while one restarts (a restart can take a minute).
     *
     * @throws IllegalStateException when instance {@code i} runs or is starting already, or the instances were closed while it
     *                               started (the new instance is then stopped again)
     */
    Service start(int i) throws Exception {
        Map<String, String> config = new LinkedHashMap<>(settings);
        config.put("http.port", Integer.toString(ports[check(i)]));
        return starts.start(i, () -> alive(i),
                () -> EnforcerProcess.start(dir.resolve(i == 0 ? "enforcer" : "enforcer-" + i), log4j2,
                        bootstrap, config),
                started -> {
                    synchronized (this) {
                        services[i] = started;
                    }
                });
    }

    /** SIGKILLs instance {@code i} and waits until it has exited. */
    synchronized void kill(int i) throws InterruptedException {
        Service service = running(i);
        service.process().signal("KILL");
        if (service.process().waitFor(EXIT_TIMEOUT) == -1) {
            throw new IllegalStateException("enforcer " + i + " (pid " + service.process().pid() + ") still running "
                    + EXIT_TIMEOUT.toSeconds() + " s after SIGKILL");
        }
    }

    /** Starts a stopped instance again with its directory and port; refused while it runs or starts. */
    Service restart(int i) throws Exception {
        return start(i);
    }

    /** Sends instance {@code i} a signal ({@code STOP}, {@code CONT}). */
    synchronized void signal(int i, String signal) {
        running(i).process().signal(signal);
    }

    /** Every instance's HTTP base URL, by index; the same across restarts. */
    List<String> urls() {
        return Arrays.stream(ports).mapToObj(port -> "http://127.0.0.1:" + port).toList();
    }

    /** How many instances the stack runs. */
    int count() {
        return ports.length;
    }

    /** Whether instance {@code i}'s process is running (it may be stopped with SIGSTOP). */
    synchronized boolean alive(int i) {
        return services[check(i)] != null && services[i].process().isAlive();
    }

    /** Instance {@code i}'s process id (a restart gives a new one). */
    synchronized long pid(int i) {
        return running(i).process().pid();
    }

    private Service running(int i) {
        Service service = services[check(i)];
        if (service == null || !service.process().isAlive()) {
            throw new IllegalStateException("enforcer " + i + " is not running");
        }
        return service;
    }

    private int check(int i) {
        return Objects.checkIndex(i, ports.length);
    }

    /**
     * Stops every instance still running, all at once (SIGTERM, SIGKILL 20 s later); a paused one is resumed first, so
     * it can act on SIGTERM.
     */
    @Override
    public void close() {
        starts.close();
        InstanceStarts.stopRunning(this, services);
    }
}
