package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.StackOptions;
import dev.fencedwrites.devtools.chaos.ChaosRun;
import dev.fencedwrites.devtools.chaos.Fault;
import java.io.IOException;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.KafkaException;

/** {@code fence chaos --stack}: a stack chaos did not start, named by the shared options, the environment or the env file. */
final class RunningStack {
    private RunningStack() {
    }

    /**
     * On a running stack by default: the writers' faults, inject, and every service fault that has a command; no network
     * fault (its processes do not run under group ids of their own).
     */
    static Set<Fault> defaultFaults(Map<Fault, String> commands) {
        Set<Fault> out = EnumSet.noneOf(Fault.class);
        for (Fault fault : Fault.values()) {
            if (!fault.network() && (!fault.service() || commands.containsKey(fault))) {
                out.add(fault);
            }
        }
        return out;
    }

    /** Where the running stack's services are, from the shared options, the environment or the env file. */
    static ChaosRun.Endpoints endpoints(StackOptions options, String postgresUrl, PrintWriter err) throws IOException {
        if (!options.kafkaClient().isEmpty()) {
            throw new IllegalStateException(
                    "--stack: that stack's Kafka needs client properties (" + StackOptions.COMMAND_CONFIG_VARIABLE
                            + "), and chaos's writers take none yet: run chaos against an unsecured stack");
        }
        String bootstrap = options.bootstrap(false, err);
        String etcd = options.etcd(err);
        String registry = options.schemaRegistry(false, err);
        String postgres = postgresUrl != null ? postgresUrl : options.setting("POSTGRES_URL", "--postgres", null, false, err);
        // Before any load: a wrong address should fail now, not after the run.
        try (Connection connection = DriverManager.getConnection(postgres)) {
            connection.isValid(5);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot connect to the sink's database " + postgres + " (--postgres, POSTGRES_URL): "
                    + e.getMessage(), e);
        }
        try (Admin admin = Admin.create(Map.of(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000, CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG,
                10_000))) {
            admin.describeCluster().nodes().get(20, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            throw new IllegalStateException("cannot reach Kafka at " + bootstrap + " (--bootstrap, KAFKA_BOOTSTRAP): " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        return new ChaosRun.Endpoints(bootstrap, List.of(etcd.split(",")), registry, postgres);
    }
}
