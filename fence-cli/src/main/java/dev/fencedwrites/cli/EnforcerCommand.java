package dev.fencedwrites.cli;

import dev.fencedwrites.enforcer.FenceEnforcerApp;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.logging.log4j.core.config.Configurator;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code fence enforcer}: runs the enforcer's own main ({@link FenceEnforcerApp}) with every argument as given, so its
 * options, help and exit status are the enforcer's (2 for an invalid configuration, 1 when Kafka Streams failed).
 *
 * <p>It logs as the Log4j 2 file {@value #LOG_CONFIG_VARIABLE} names, which the launchers set to their
 * {@code config/log4j2.properties}, unless {@code log4j2.configurationFile} was given (as {@code LOG4J2_CONFIG} does): the
 * other commands print errors only.
 */
@Command(name = "enforcer", header = "Run a fence enforcer (Kafka Streams) against any Kafka cluster.", usageHelpWidth = 130,
        mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, description = {
                "Runs a fence enforcer (Kafka Streams) against any Kafka cluster, e.g. a second instance beside ./fence up's;",
                "see docs/operate/enforcer.md. Every argument goes to the enforcer as it is: "
                        + "./fence enforcer --help shows its own",
                "options (--config FILE)."},
        footer = {"", "Example:",
                "  ./fence enforcer --config enforcer.properties"})
public final class EnforcerCommand implements Callable<Integer> {
    /** The environment variable naming the enforcer's Log4j 2 configuration file. */
    static final String LOG_CONFIG_VARIABLE = "FENCE_LOG4J2_ENFORCER";

    @Parameters(paramLabel = "ARG", description = "The enforcer's arguments, e.g. --config FILE.")
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() {
        String logConfig = System.getenv(LOG_CONFIG_VARIABLE);
        if (logConfig != null && !logConfig.isBlank() && System.getProperty("log4j2.configurationFile") == null) {
            Configurator.reconfigure(Path.of(logConfig).toUri());
        }
        FenceEnforcerApp.main(args.toArray(String[]::new)); // exits the JVM with the enforcer's status
        return 0;
    }
}
