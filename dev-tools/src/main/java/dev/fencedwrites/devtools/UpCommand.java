package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.BuildVersion;
import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.cli.FenceMain;
import dev.fencedwrites.cli.StackOptions;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.LocalStackBuilder;
import dev.fencedwrites.localstack.StackUsers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence up}: starts the local stack, prints where each service listens, runs until SIGINT or SIGTERM
 * ({@code ./fence down}).
 */
@Command(name = "up", header = "Start the whole stack on loopback, print where each service listens, run until Ctrl-C.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, description = {
                "Starts the whole fenced-writes pipeline on loopback: Kafka (KRaft), etcd, a schema registry, PostgreSQL, "
                        + "the fence enforcer and a Connect worker running the fenced sink into table " + BillingConnectors.TABLE
                        + ".",
                "Once every part is ready it prints export KEY=value lines (also written to the env file, for `source`) and "
                        + "runs until Ctrl-C, SIGTERM or ./fence down, then stops everything it started. Meanwhile it "
                        + "restarts an enforcer or "
                        + "Connect worker whose process exits, and the FENCE_FAULT_* lines are the shell commands with which "
                        + "./fence chaos --stack kills or pauses them (and etcd). Ports are free ones on 127.0.0.1, "
                        + "picked anew on each start.",
                "With --cluster it starts the production shape instead: 3 Kafka brokers (KRaft; replication factor "
                        + "3, min.insync.replicas 2 for every topic), 3 etcd members, 2 enforcer instances (one application id, "
                        + "a standby replica) and 2 Connect workers in one distributed group (the sink runs 2 tasks, one each). "
                        + "It costs about 5 GiB of heap (3 x 512 MiB brokers, 2 x 512 MiB enforcers, 2 x 512 MiB workers, the "
                        + "registry and PostgreSQL) and 50 to 75 s to be ready on an idle 2-core machine; KAFKA_BOOTSTRAP and "
                        + "ETCD_ENDPOINTS then list every node, ENFORCER_URLS, CONNECT_URLS and CONNECT_METRICS_URLS every "
                        + "instance.",
                "Exit status: 130 after Ctrl-C and 143 after SIGTERM or ./fence down (128 plus the signal, as for any JVM "
                        + "a signal stops), once everything it started has stopped; 1 with a one-line reason when a service "
                        + "does not start, 2 for "
                        + "--cluster with --secured (not supported yet)."},
        footer = {"",
                "Example:", "  ./fence up                  # in one terminal",
                "  source .fence/stack.env     # in another, then:",
                "  curl $ENFORCER_URL/metrics",
                "  psql \"$${POSTGRES_URL#jdbc:}\" -c 'select * from " + BillingConnectors.TABLE + "'"})
public final class UpCommand implements Callable<Integer> {
    /** Where {@code up} writes its settings unless {@code --env-file} says otherwise. */
    static final Path DEFAULT_ENV_FILE = Path.of(".fence/stack.env");
    /**
     * The enforcers' group session: a killed enforcer that up restarts gets its partitions back once its killed self's session
     * expires, 10 s here (Kafka's default before KIP-735 raised it to 45 s; the Connect tasks' consumers use the same).
     */
    static final Map<String, String> ENFORCER_SESSION = Map.of("streams.session.timeout.ms", "10000");

    @Option(names = "--dir", paramLabel = "DIR", description = "Data and log directory (default: a new temporary directory).")
    Path dir;

    @Option(names = "--unfenced-control", description = "Also run a sink with the fence guard off, from the input topic into "
            + BillingConnectors.UNFENCED_TABLE + ".")
    boolean unfencedControl;

    @Option(names = "--secured", description = "Secure the broker: SASL_SSL (SCRAM-SHA-512 over TLS, a CA made at start) with "
            + "ACLs, every part as its own user (docs/operate/security.md); the env file's KAFKA_COMMAND_CONFIG names "
            + "the CLI's client properties, which produce, rejected and consume then use.")
    boolean secured;

    @Option(names = "--cluster", description = "Start the production shape: 3 brokers, 3 etcd members, 2 enforcers, 2 "
            + "distributed Connect workers (see above; about 5 GiB of heap, 50 to 75 s to ready on 2 idle cores).")
    boolean cluster;

    @Mixin
    EnforcerSettingOption enforcerSettings = new EnforcerSettingOption();

    @ParentCommand
    FenceMain fence;
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (cluster && secured) {
            System.err.println("fence up: --cluster and --secured together are not supported yet (the secured stack has one "
                    + "broker); use one of them");
            return 2;
        }
        Map<String, String> enforcer;
        try {
            enforcer = enforcerSettings.over(ENFORCER_SESSION);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
        Path envFile = fence.stack().envFileOr(DEFAULT_ENV_FILE);
        Path stackDir = dir != null ? dir : Files.createTempDirectory("fenced-writes-stack-");
        System.err.println("[fence up] data and logs in " + stackDir);
        LocalStack stack;
        try {
            LocalStackBuilder builder = LocalStack.builder(stackDir).connectors(BillingConnectors.set(unfencedControl))
                    .enforcerSettings(enforcer).progress(line -> System.err.println("[fence up] " + line));
            if (secured) {
                builder.secured();
            }
            if (cluster) {
                builder.cluster();
            }
            stack = builder.start();
        } catch (Exception e) {
            System.err.println("[fence up] failed: " + e.getMessage());
            return 1;
        }
        UpSupervisor supervisor = new UpSupervisor(stack, stackDir, line -> System.err.println("[fence up] " + line));
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("[fence up] stopping ...");
            long stopping = System.nanoTime();
            supervisor.close();
            stack.close();
            EnvFile.deleteQuietly(envFile);
            System.err.printf("[fence up] stopped every service in %.1f s; data and logs stay in %s%n",
                    (System.nanoTime() - stopping) / 1e9, stackDir);
            stop.countDown();
        }, "fence-up-stop"));
        Map<String, String> env = new LinkedHashMap<>(stack.env());
        stack.kafkaSecurity().ifPresent(security -> env.put(StackOptions.COMMAND_CONFIG_VARIABLE, security
                .writeClientProperties(StackUsers.OPERATOR, stack.kafkaBootstrap(), stackDir.resolve("operator.properties"))
                .toString()));
        env.putAll(supervisor.faultCommands());
        env.putAll(DownCommand.selfSettings()); // ./fence down stops this process by them
        String lines = EnvFile.lines(env);
        EnvFile.write(envFile, lines);
        System.out.print(lines);
        System.out.flush();
        supervisor.start();
        System.err.println("[fence up] ready; env written to " + envFile + ". An enforcer or Connect worker that exits is "
                + "restarted. Ctrl-C stops everything.");
        stop.await();
        return 0;
    }
}
