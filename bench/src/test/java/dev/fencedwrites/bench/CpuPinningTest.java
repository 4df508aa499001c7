package dev.fencedwrites.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
        assertThat(CpuPinning.split(List.of(0, 1))).isEqualTo(new CpuPinning("0", "1"));
        assertThat(CpuPinning.split(List.of(0, 1, 2))).isEqualTo(new CpuPinning("0", "1,2"));
        assertThat(CpuPinning.split(List.of(2, 3, 4, 5))).isEqualTo(new CpuPinning("2,3", "4,5"));
    }

    @Test
    void oneCpuIsRefusedNamingTheOption() {
        assertThatThrownBy(() -> CpuPinning.split(List.of(0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--pin-cpus").hasMessageContaining("at least 2 CPUs");
    }

    @Test
    void movesEveryThreadOfAProcessToItsHalf() throws Exception {
        Assumptions.assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, "needs 2 CPUs");
        CpuPinning pinning = CpuPinning.split();
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        try {
            pinning.pinBroker(sleeper.toHandle());

            String status = Files.readString(Path.of("/proc", Long.toString(sleeper.pid()), "status"));
            String allowed = status.lines().filter(line -> line.startsWith("Cpus_allowed_list:")).findFirst().orElseThrow();
            assertThat(CpuPinning.cpus(allowed.substring(allowed.indexOf(':') + 1).strip()))
                    .isEqualTo(CpuPinning.cpus(pinning.broker()));
        } finally {
            sleeper.destroy();
        }
    }
}
