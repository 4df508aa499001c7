package dev.fencedwrites.services;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Two processes never get the same port from {@link FreePorts}: the other process is real (Python, whose
 * {@code fcntl.lockf} takes the same POSIX record lock as Java's {@code FileChannel.tryLock} on Linux).
 */
@Tag("process")
class FreePortsTest {
    /** Python that locks the file named by its first argument and says so. */
    private static final String LOCK = "import fcntl, sys, time\nf = open(sys.argv[1], 'w')\nfcntl.lockf(f, fcntl.LOCK_EX)\n"
            + "print('locked', flush=True)\n";

    /** Runs {@code script} in another process, with the lock file of {@code port} as its argument. */
    private static Process python(String script, int port) throws Exception {
        Files.createDirectories(FreePorts.lockDir());
        // test-support's MissingToolSkips is not on this module's class path (it depends on this one): skip here, as it
        // would, unless fence.tools.required (./fence test), where the start below fails instead.
        if (Tools.onPath("python3").isEmpty() && !Boolean.getBoolean("fence.tools.required")) {
            Assumptions.abort("skipped: " + new MissingToolException("python3", "apt-get install -y python3").getMessage());
        }
        return new ProcessBuilder("python3", "-c", script, FreePorts.lockDir().resolve(port + ".lock").toString())
                .redirectErrorStream(true).start();
    }

    @Test
    void aPortWhoseLockAnotherProcessHoldsIsPassedOver() throws Exception {
        int taken = 1_000 + (int) (ProcessHandle.current().pid() % 20_000);
        Process holder = python(LOCK + "time.sleep(120)\n", taken);
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            assertThat(out.readLine()).isEqualTo("locked");
            Iterator<Integer> candidates = List.of(taken, taken, taken + 1).iterator();

            assertThat(FreePorts.pick(candidates::next)).as("the held port twice, then the next").isEqualTo(taken + 1);
        } finally {
            holder.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Offering this process a port it holds again must neither hand it out nor drop the lock others see (POSIX locks). */
    @Test
    void aPortThisProcessPickedIsNotHandedOutAgainAndStaysLockedForOthers() throws Exception {
        int first = FreePorts.pick();
        int other = 40_000 + (int) (ProcessHandle.current().pid() % 20_000);
        Iterator<Integer> candidates = List.of(first, other).iterator();

        assertThat(FreePorts.pick(candidates::next)).isEqualTo(other);

        Process probe = python("import fcntl, sys\nf = open(sys.argv[1], 'w')\ntry:\n"
                + "    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('free')\nexcept OSError:\n    print('held')\n",
                first);
        assertThat(probe.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip())
                .as("another process's view of the lock on port %d", first).isEqualTo("held");
    }

    @Test
    void aPortWhoseHolderEndedIsFreeAgain() throws Exception {
        int released = 21_000 + (int) (ProcessHandle.current().pid() % 10_000);
        Process holder = python(LOCK, released);
        assertThat(holder.waitFor(30, TimeUnit.SECONDS)).isTrue();
        Iterator<Integer> candidates = List.of(released).iterator();

        assertThat(FreePorts.pick(candidates::next)).isEqualTo(released);
    }
}
