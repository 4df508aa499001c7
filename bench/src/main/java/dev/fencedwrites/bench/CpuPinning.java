package dev.fencedwrites.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code --pin-cpus}: while a broker runs, the broker on one half of the CPUs this process may run on and this JVM on the
 * other, with Linux's {@code taskset} (util-linux; {@code -a} moves every thread of a process, and threads started later
 * inherit their creator's CPUs, sched_setaffinity(2)). The broker gets the lower half, rounded down, and at least one CPU.
 * Both JVMs start with every CPU (so their GC and thread pools are sized as in a run without the option) and are moved once
 * the broker is up; this JVM gets every CPU back when the broker stops. A process this JVM starts while pinned (the churn
 * part's enforcer and etcd) starts on its half. Immutable.
 *
 * @param broker the broker's CPUs, a taskset list such as {@code 0} or {@code 0,1}
 * @param bench  this JVM's CPUs while the broker runs
 * @param all    the CPUs this process may run on, given back when the broker stops
 */
record CpuPinning(String broker, String bench, String all) {
    private static final Path STATUS = Path.of("/proc/self/status");

    /**
     * The split of this process's allowed CPUs ({@code Cpus_allowed_list} of /proc/self/status).
     *
     * @throws IllegalArgumentException naming {@code --pin-cpus} when there are fewer than two CPUs, or none can be read
     */
    static CpuPinning split() throws IOException {
        if (!Files.isReadable(STATUS)) {
            throw new IllegalArgumentException("--pin-cpus needs Linux (" + STATUS + " is not readable)");
        }
        String allowed = Files.readAllLines(STATUS, StandardCharsets.UTF_8).stream()
                .filter(line -> line.startsWith("Cpus_allowed_list:")).map(line -> line.substring(line.indexOf(':') + 1).strip())
                .findFirst().orElseThrow(() -> new IllegalArgumentException("--pin-cpus: no Cpus_allowed_list in " + STATUS));
        return split(cpus(allowed));
    }

    /** The split of {@code cpus}, in ascending order. */
    static CpuPinning split(List<Integer> cpus) {
        if (cpus.size() < 2) {
            throw new IllegalArgumentException("--pin-cpus needs at least 2 CPUs, this process may run on " + cpus.size());
        }
        int half = cpus.size() / 2;
        return new CpuPinning(list(cpus.subList(0, half)), list(cpus.subList(half, cpus.size())), list(cpus));
    }

    /** The CPUs of a taskset list such as {@code 0-3,6}. */
    static List<Integer> cpus(String list) {
        List<Integer> cpus = new ArrayList<>();
        for (String part : list.split(",")) {
            String[] range = part.strip().split("-");
            int first = Integer.parseInt(range[0]);
            int last = range.length == 1 ? first : Integer.parseInt(range[1]);
            for (int cpu = first; cpu <= last; cpu++) {
                cpus.add(cpu);
            }
        }
        return cpus;
    }

    /**
     * Moves every thread of {@code broker} to {@link #broker} and every thread of this JVM to {@link #bench}; closing the
     * answer gives this JVM {@link #all} back.
     */
    AutoCloseable pin(ProcessHandle broker) throws IOException, InterruptedException {
        taskset(this.broker, broker.pid());
        long self = ProcessHandle.current().pid();
        taskset(bench, self);
        return () -> taskset(all, self);
    }

    /** How the report states it. */
    String describe() {
        return "while a broker runs, the broker on " + cpuWord(broker) + " " + broker + " and this JVM on " + cpuWord(bench) + " "
                + bench + ", both started on every CPU and moved once the broker was up (--pin-cpus); what this JVM starts "
                + "meanwhile (the churn part's etcd and enforcer) runs on its CPUs";
    }

    private static String cpuWord(String list) {
        return cpus(list).size() == 1 ? "CPU" : "CPUs";
    }

    private static String list(List<Integer> cpus) {
        return String.join(",", cpus.stream().map(String::valueOf).toList());
    }

    /** Runs {@code taskset -a -p -c cpus pid}; exported for the test, which pins a process of its own. */
    static void taskset(String cpus, long pid) throws IOException, InterruptedException {
        Process process;
        try {
            process = new ProcessBuilder("taskset", "-a", "-p", "-c", cpus, Long.toString(pid)).redirectErrorStream(true)
                    .start();
        } catch (IOException e) {
            throw new IllegalStateException("--pin-cpus needs taskset (util-linux) on the PATH: " + e.getMessage(), e);
        }
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("--pin-cpus: taskset -a -p -c " + cpus + " " + pid + " did not end in 30 s");
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (process.exitValue() != 0) {
            throw new IllegalStateException("--pin-cpus: taskset -a -p -c " + cpus + " " + pid + " failed: " + output);
        }
    }
}
