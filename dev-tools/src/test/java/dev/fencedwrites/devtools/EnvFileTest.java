package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.cli.StackSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("process")
class EnvFileTest {
    private static final Map<String, String> SETTINGS = new LinkedHashMap<>(Map.of("KAFKA_BOOTSTRAP", "127.0.0.1:41234",
            "POSTGRES_URL", "jdbc:postgresql://127.0.0.1:35555/postgres?user=postgres&password=it's"));

    @TempDir
    Path dir;

    @Test
    void aSourcedEnvFileReachesTheEnvironmentOfProgramsStartedAfterwards() throws Exception {
        Path file = dir.resolve("stack.env");
        EnvFile.write(file, EnvFile.lines(SETTINGS));

        // `env` is a child of the shell: it sees exported variables only.
        Map<String, String> env = SourcedEnvFile.sourced(file, SETTINGS.keySet());

        assertThat(env).containsEntry("KAFKA_BOOTSTRAP", "127.0.0.1:41234")
                .containsEntry("POSTGRES_URL", "jdbc:postgresql://127.0.0.1:35555/postgres?user=postgres&password=it's");
    }

    @Test
    void theOperatorCommandsReadExportedLinesAndTheLinesOfEarlierVersions() throws Exception {
        // Names no environment sets: a set variable would win over the file.
        Path exported = dir.resolve("stack.env");
        EnvFile.write(exported, EnvFile.lines(Map.of("ENV_FILE_TEST_URL", "jdbc:x://h/p?user=a&password=it's")));
        Path earlier = dir.resolve("old.env");
        Files.writeString(earlier, "ENV_FILE_TEST_BOOTSTRAP=127.0.0.1:9092\n");

        assertThat(StackSettings.get("ENV_FILE_TEST_URL", "--url", exported, false, null))
                .isEqualTo("jdbc:x://h/p?user=a&password=it's");
        assertThat(StackSettings.get("ENV_FILE_TEST_BOOTSTRAP", "--bootstrap", earlier, false, null)).isEqualTo("127.0.0.1:9092");
    }
}
