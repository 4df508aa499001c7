package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The class path {@code ./fence} runs with ({@code dev-tools/target/classes} and the packaged
 * {@code target/classpath.txt}, runtime scope) must hold every main class that {@code ./fence}
 * and the stack's child JVMs start, linked and initialized. The integration tests run on the test
 * class path, so without this a dependency that exists only there (a test-scoped override of a
 * transitive one, say) breaks {@code ./fence up} and {@code ./fence demo} while every other test passes.
 */
class FenceClasspathIT {
    @ParameterizedTest
    @ValueSource(strings = {
            "dev.fencedwrites.devtools.DevMain", "dev.fencedwrites.cli.FenceMain", "dev.fencedwrites.demo.BillingWorker",
            "dev.fencedwrites.enforcer.FenceEnforcerApp", "org.apache.kafka.connect.cli.ConnectStandalone", "kafka.Kafka",
            "kafka.tools.StorageTool"})
    void everyMainClassLinksOnTheRuntimeClassPath(String mainClass) throws Exception {
        try (URLClassLoader runtime = runtimeClassPath()) {
            assertThatCode(() -> {
                Class<?> main = Class.forName(mainClass, true, runtime);
                main.getMethod("main", String[].class);
            }).as("%s on ./fence's class path", mainClass).doesNotThrowAnyException();
        }
    }

    @Test
    void everySubcommandOfDevMainIsBuiltOnTheRuntimeClassPath() throws Exception {
        try (URLClassLoader runtime = runtimeClassPath()) {
            Object line = Class.forName("dev.fencedwrites.devtools.DevMain", true, runtime).getMethod("commandLine").invoke(null);
            Object subcommands = line.getClass().getMethod("getSubcommands").invoke(line);
            assertThat(((Map<?, ?>) subcommands).keySet().stream().map(String::valueOf).toList())
                    .as("fence's subcommands, instantiated from ./fence's class path")
                    .containsExactlyInAnyOrder("demo", "up", "down", "enforcer", "rejected", "consume", "produce", "inspect",
                            "verify",
                            "chaos",
                            "help");
        }
    }

    private static URLClassLoader runtimeClassPath() throws Exception {
        Path target = Path.of("target");
        Path classpathFile = target.resolve("classpath.txt");
        assertThat(classpathFile).as("written by the package phase").exists();
        List<URL> urls = new ArrayList<>();
        urls.add(target.resolve("classes").toUri().toURL());
        for (String entry : Files.readString(classpathFile, StandardCharsets.UTF_8).trim().split(File.pathSeparator)) {
            urls.add(Path.of(entry).toUri().toURL());
        }
        return new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
    }
}
