package dev.fencedwrites.testing;

import dev.fencedwrites.services.EtcdCluster;
import java.nio.file.Path;
import java.util.List;

/**
 * A real multi-member etcd cluster on loopback ({@link EtcdCluster}: members that tests kill and restart) as a
 * JUnit 5 extension; see {@link ServiceExtension} for its lifecycle.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final EtcdClusterExtension etcd = EtcdClusterExtension.withMembers(3);
 * ... etcd.cluster().kill(etcd.cluster().leader()) ...
 * }</pre>
 */
public final class EtcdClusterExtension extends ServiceExtension<EtcdCluster> {
    private final int members;

    private EtcdClusterExtension(int members) {
        super("etcd-cluster");
        if (members < 1) {
            throw new IllegalArgumentException("an etcd cluster needs at least 1 member, got " + members);
        }
        this.members = members;
    }

    /**
     * An extension that starts {@code members} members as one cluster (3 tolerates one member down).
     *
     * @throws IllegalArgumentException if {@code members < 1}
     */
    public static EtcdClusterExtension withMembers(int members) {
        return new EtcdClusterExtension(members);
    }

    @Override
    EtcdCluster start(Path dir) throws Exception {
        return EtcdCluster.start(dir, members);
    }

    /** The running cluster: leader, kill, restart. */
    public EtcdCluster cluster() {
        return service();
    }

    /** The members' client URLs, index = member number; the same for the cluster's life. */
    public List<String> endpoints() {
        return service().endpoints();
    }
}
