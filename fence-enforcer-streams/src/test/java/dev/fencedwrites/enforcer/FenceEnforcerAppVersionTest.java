package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code fence-enforcer --version} names the build's version, as every launcher does. */
class FenceEnforcerAppVersionTest {
    @Test
    void versionPrintsTheFilteredProjectVersion() {
        StringWriter out = new StringWriter();
        int exit = new CommandLine(new FenceEnforcerApp()).setOut(new PrintWriter(out)).execute("--version");
        assertThat(exit).isZero();
        assertThat(out.toString().strip()).matches("fenced-writes \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
    }
}
