package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.cli.FenceMain;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./fence down} against real processes standing in for {@code ./fence up} (a {@code sleep}): it signals only the
 * process the env file names, with its start time, and says what it did. {@code FenceUpIT} stops a real {@code up} with it.
 */
@Tag("process")
class DownCommandTest {
    @TempDir
    Path dir;
    private Process sleeper;

    @AfterEach
    void stopSleeper() {
        if (sleeper != null) {
            sleeper.destroyForcibly();
        }
    }

    @Test
    void stopsTheProcessTheEnvFileNamesAndWaitsForItToExit() throws Exception {
        sleeper = new ProcessBuilder("sleep", "300").start();
        Path envFile = envFile(sleeper.toHandle(), start(sleeper.toHandle()));

        FenceRun down = FenceRun.of("down", "--env-file", envFile.toString());

        assertThat(down.exit()).as(down.err()).isZero();
        assertThat(down.err()).contains("stopping ./fence up (pid " + sleeper.pid() + ") with SIGTERM")
                .contains("exited in");
        assertThat(sleeper.isAlive()).isFalse();
        assertThat(sleeper.exitValue()).isEqualTo(143); // SIGTERM, not SIGKILL
    }

    @Test
    void neverSignalsAProcessThatOnlyHasTheSamePid() throws Exception {
        sleeper = new ProcessBuilder("sleep", "300").start();
        // The pid of a live process but another start time: up died and the system gave its pid to this program.
        Path envFile = envFile(sleeper.toHandle(), start(sleeper.toHandle()).minusSeconds(3_600));

        FenceRun down = FenceRun.of("down", "--env-file", envFile.toString());

        assertThat(down.exit()).isEqualTo(1);
        assertThat(down.err()).contains("process " + sleeper.pid() + " runs, but did not start at")
                .contains("not signalled, and the file is kept");
        assertThat(sleeper.waitFor(1, TimeUnit.SECONDS)).as("the unrelated process still runs").isFalse();
        assertThat(envFile).exists();
    }

    @Test
    void removesAStaleEnvFileWhoseProcessIsGone() throws Exception {
        Process gone = new ProcessBuilder("sleep", "300").start();
        Instant started = start(gone.toHandle());
        gone.destroyForcibly();
        assertThat(gone.waitFor(10, TimeUnit.SECONDS)).isTrue();
        Path envFile = envFile(gone.toHandle(), started);

        FenceRun down = FenceRun.of("down", "--env-file", envFile.toString());

        assertThat(down.exit()).as(down.err()).isZero();
        assertThat(down.err()).contains("(pid " + gone.pid() + ") is not running any more").contains("--dir/pids/");
        assertThat(envFile).doesNotExist();
    }

    @Test
    void nothingToStopWithoutAnEnvFile() {
        FenceRun down = FenceRun.of("down", "--env-file", dir.resolve("none.env").toString());

        assertThat(down.exit()).isZero();
        assertThat(down.err()).contains("nothing to stop: no " + dir.resolve("none.env"));
    }

    @Test
    void refusesAnEnvFileThatNamesNoUpProcess() throws Exception {
        Path envFile = dir.resolve("demo.env");
        EnvFile.write(envFile, EnvFile.lines(Map.of("KAFKA_BOOTSTRAP", "127.0.0.1:9092")));

        FenceRun down = FenceRun.of("down", "--env-file", envFile.toString());

        assertThat(down.exit()).isEqualTo(1);
        assertThat(down.err()).contains("names no ./fence up process (FENCE_UP_PID=null");
        assertThat(envFile).exists();
    }

    @Test
    void aWrongTimeoutIsAUsageError() {
        FenceRun down = FenceRun.of("down", "--timeout", "soon", "--env-file", dir.resolve("none.env").toString());

        assertThat(down.exit()).isEqualTo(FenceMain.USAGE_ERROR);
        assertThat(down.err()).contains("Invalid value for option '--timeout': 'soon' is not a duration");
    }

    private Path envFile(ProcessHandle process, Instant started) throws IOException {
        Path file = dir.resolve("stack.env");
        EnvFile.write(file, EnvFile.lines(Map.of("KAFKA_BOOTSTRAP", "127.0.0.1:9092", DownCommand.PID,
                Long.toString(process.pid()), DownCommand.STARTED, started.toString())));
        return file;
    }

    private static Instant start(ProcessHandle process) {
        return process.info().startInstant().orElseThrow();
    }
}
