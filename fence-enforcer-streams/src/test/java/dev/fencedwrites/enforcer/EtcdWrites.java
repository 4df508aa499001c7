package dev.fencedwrites.enforcer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** The etcd writes the verification ITs set their history up with: leases, and keys put under them. */
final class EtcdWrites {
    private EtcdWrites() {
    }

    /** A lease of 120 s; its id. */
    static long grant(Client etcd) throws Exception {
        return etcd.getLeaseClient().grant(120).get(30, TimeUnit.SECONDS).getID();
    }

    /** Puts {@code name} with an empty value under {@code lease} (0: none); the revision of the put. */
    static long put(Client etcd, String name, long lease) throws Exception {
        PutOption option = lease == 0 ? PutOption.DEFAULT : PutOption.builder().withLeaseId(lease).build();
        return etcd.getKVClient().put(ByteSequence.from(name, StandardCharsets.UTF_8), ByteSequence.EMPTY, option)
                .get(30, TimeUnit.SECONDS).getHeader().getRevision();
    }
}
