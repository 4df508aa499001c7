package dev.fencedwrites.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class CpuPinningTest {
    @Test
    void readsTasksetLists() {
        assertThat(CpuPinning.cpus("0-3,6")).containsExactly(0, 1, 2, 3, 6);
        assertThat(CpuPinning.cpus("1")).containsExactly(1);
    }

    @Test
    void theBrokerGetsTheLowerHalfRoundedDown() {
        assertThat(CpuPinning.split(List.of(0, 1))).isEqualTo(new CpuPinning("0", "1", "0,1"));
        assertThat(CpuPinning.split(List.of(0, 1, 2))).isEqualTo(new CpuPinning("0", "1,2", "0,1,2"));
        assertThat(CpuPinning.split(List.of(2, 3, 4, 5))).isEqualTo(new CpuPinning("2,3", "4,5", "2,3,4,5"));
    }

    @Test
    void oneCpuIsRefusedNamingTheOption() {
        assertThatThrownBy(() -> CpuPinning.split(List.of(0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--pin-cpus").hasMessageContaining("at least 2 CPUs");
    }

    @Test
    void pinsEveryThreadOfTheBrokerAndOfThisJvmUntilClosed() throws Exception {
        Assumptions.assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, "needs 2 CPUs");
        Assumptions.assumeTrue(Stream.of(System.getenv("PATH").split(":")).anyMatch(dir -> Files.isExecutable(
                Path.of(dir, "taskset"))), "needs taskset");
        CpuPinning pinning = CpuPinning.split();
        Process broker = new ProcessBuilder("sleep", "60").start();
        long self = ProcessHandle.current().pid();
        try {
            try (AutoCloseable pinned = pinning.pin(broker.toHandle())) {
                assertThat(threadsCpus(broker.pid())).containsOnly(CpuPinning.cpus(pinning.broker()));
                assertThat(threadsCpus(self)).containsOnly(CpuPinning.cpus(pinning.bench()));
                // A thread started after pinning inherits its creator's CPUs.
                AtomicReference<List<Integer>> later = new AtomicReference<>();
                Thread thread = new Thread(() -> later.set(cpusOf(Path.of("/proc/thread-self/status"))));
                thread.start();
                thread.join();
                assertThat(later.get()).isEqualTo(CpuPinning.cpus(pinning.bench()));
            }
            assertThat(threadsCpus(self)).containsOnly(CpuPinning.cpus(pinning.all()));
        } finally {
            broker.destroy();
        }
    }

    /** Each thread's allowed CPUs. */
    private static List<List<Integer>> threadsCpus(long pid) throws IOException {
        try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            return tasks.map(task -> cpusOf(task.resolve("status"))).toList();
        }
    }

    private static List<Integer> cpusOf(Path status) {
        try {
            String allowed = Files.readAllLines(status).stream().filter(line -> line.startsWith("Cpus_allowed_list:"))
                    .findFirst().orElseThrow();
            return CpuPinning.cpus(allowed.substring(allowed.indexOf(':') + 1).strip());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
