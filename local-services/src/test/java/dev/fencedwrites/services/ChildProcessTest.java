package dev.fencedwrites.services;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Stopping a set of child processes at once: real {@code bash} processes, since signals are what is tested. */
@Tag("process")
class ChildProcessTest {
    /** A process that exits on SIGTERM. */
    private static final List<String> OBEDIENT = List.of("sleep", "600");
    /** A process that ignores SIGTERM (a service stuck in its shutdown): only SIGKILL stops it. */
    private static final List<String> DEAF = List.of("bash", "-c", "trap '' TERM; echo trapped; while :; do sleep 1; done");

    @TempDir
    Path dir;

    private final List<ChildProcess> started = new ArrayList<>();

    /** A failed test must not leave a process behind ({@link ChildProcess#close}: SIGTERM, SIGKILL 20 s later). */
    @AfterEach
    void killWhatIsLeft() {
        started.forEach(ChildProcess::close);
    }

    @Test
    void stopAllStopsEveryRunningChildAndSkipsNullsAndExitedOnes() throws Exception {
        ChildProcess first = start("first", OBEDIENT);
        ChildProcess second = start("second", OBEDIENT);
        ChildProcess exited = start("exited", List.of("true"));
        assertThat(exited.waitFor(Duration.ofSeconds(30))).isZero();

        ChildProcess.stopAll(Arrays.asList(first, null, exited, second), Duration.ofSeconds(20));

        assertThat(List.of(first, second)).noneMatch(ChildProcess::isAlive);
    }

    @Test
    void terminateAllKillsAProcessThatIgnoresSigtermOnceTheGracePeriodIsOver() throws Exception {
        ChildProcess deaf = start("deaf", DEAF);
        ChildProcess obedient = start("obedient", OBEDIENT);
        awaitTrapSet(deaf);

        ChildProcess.terminateAll(List.of(ProcessHandle.of(deaf.pid()).orElseThrow(), ProcessHandle.of(obedient.pid())
                .orElseThrow()), Duration.ofMillis(500));

        assertThat(deaf.isAlive()).as("SIGKILLed after the grace period").isFalse();
        assertThat(deaf.waitFor(Duration.ofSeconds(10))).as("exit code 128 + SIGKILL").isEqualTo(137);
        assertThat(obedient.waitFor(Duration.ofSeconds(10))).as("exit code 128 + SIGTERM").isEqualTo(143);
    }

    private ChildProcess start(String name, List<String> command) {
        ChildProcess process = ChildProcess.start(name, command, dir, dir.resolve(name + ".log"), Map.of());
        started.add(process);
        return process;
    }

    /** Until bash has set its trap (it prints "trapped" after), SIGTERM would still end it. */
    private static void awaitTrapSet(ChildProcess process) throws Exception {
        Await.until("bash's SIGTERM trap", Duration.ofSeconds(30), process,
                () -> Files.readString(process.log()).contains("trapped"));
    }
}
