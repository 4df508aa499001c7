package dev.fencedwrites.localstack;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./fence up}: starts the local stack, prints where each service listens, runs until SIGINT or SIGTERM. */
@Command(name = "fence up", usageHelpWidth = 130, mixinStandardHelpOptions = true,
        description = {"Starts the whole fenced-writes pipeline on loopback: Kafka (KRaft), etcd, a schema registry, PostgreSQL, "
                + "the fence enforcer and a Connect worker running the fenced sink into table " + BillingConnectors.TABLE + ".",
                "Once every part is ready it prints KEY=value lines (also written to the env file, ready for `source`) and runs until Ctrl-C or SIGTERM, "
                + "then stops everything it started. Ports are free ones on 127.0.0.1, picked anew on each start."},
        footer = {"", "Example:", "  ./fence up                  # in one terminal",
                "  source .fence/stack.env     # in another, then:",
                "  curl $ENFORCER_URL/metrics",
                "  psql \"$${POSTGRES_URL#jdbc:}\" -c 'select * from " + BillingConnectors.TABLE + "'"})
public final class LocalStackMain implements Callable<Integer> {
    @Option(names = "--dir", paramLabel = "DIR", description = "Data and log directory (default: a new temporary directory).")
    Path dir;

    @Option(names = "--env-file", paramLabel = "FILE", defaultValue = ".fence/stack.env",
            description = "Where to write the KEY=value lines (default: ${DEFAULT-VALUE}).")
    Path envFile;

    @Option(names = "--unfenced-control", description = "Also run a sink with the fence guard off, from the input topic into " + BillingConnectors.UNFENCED_TABLE + ".")
    boolean unfencedControl;

    public static void main(String[] args) {
        System.exit(new CommandLine(new LocalStackMain()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Path stackDir = dir != null ? dir : Files.createTempDirectory("fenced-writes-stack-");
        System.err.println("[fence up] data and logs in " + stackDir);
        LocalStack stack;
        try {
            stack = LocalStack.builder(stackDir).connectors(BillingConnectors.set(unfencedControl))
                    .progress(line -> System.err.println("[fence up] " + line)).start();
        } catch (Exception e) {
            System.err.println("[fence up] failed: " + e.getMessage());
            return 1;
        }
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("[fence up] stopping ...");
            stack.close();
            deleteQuietly(envFile);
            stop.countDown();
        }, "fence-up-stop"));
        StringBuilder lines = new StringBuilder();
        for (Map.Entry<String, String> entry : stack.env().entrySet()) {
            lines.append(entry.getKey()).append('=').append(shellQuoted(entry.getValue())).append('\n');
        }
        writeEnvFile(lines.toString());
        System.out.print(lines);
        System.out.flush();
        System.err.println("[fence up] ready; env written to " + envFile + ". Ctrl-C stops everything.");
        stop.await();
        return 0;
    }

    /** Single-quotes values the shell would split or interpret (the JDBC URL's {@code &}), so {@code source} works. */
    public static String shellQuoted(String value) {
        return value.matches("[A-Za-z0-9_./:@%+,=-]*") ? value : "'" + value.replace("'", "'\\''") + "'";
    }

    private void writeEnvFile(String lines) throws IOException {
        Path parent = envFile.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(envFile, lines);
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // best effort: a stale file names ports nothing listens on
        }
    }
}
