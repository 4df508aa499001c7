package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.services.ChildProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Bad records from a non-Java client: Debian's kcat writes them to the input topic as a worker in another language would.
 * Four kinds, each with a fence the enforcer must refuse:
 * <ul>
 *   <li>forged: a token far above etcd's revision (token verification: {@code FUTURE_TOKEN});</li>
 *   <li>borrowed: the token and lease of another key's real acquisition ({@code LOCK_NOT_HELD}, or {@code STALE_TOKEN});</li>
 *   <li>stale: token 1, on a key a worker has had a write acknowledged for ({@code STALE_TOKEN}: the key has a fence;
 *       a random key before any acknowledgement);</li>
 *   <li>duplicate: the fencing headers of a write a worker already had acknowledged ({@code DUPLICATE},
 *       {@code OUT_OF_ORDER} or {@code STALE_TOKEN}, depending on how far the key has moved since).</li>
 * </ul>
 * Half go through kcat's default partitioner (not Kafka's murmur2: the enforcer re-routes them), half through
 * {@code murmur2_random}.
 */
final class Injector {
    /** The forged token: far above any revision a test's etcd reaches. */
    static final long FORGED_TOKEN = 900_000_000_000L;

    private final String bootstrap;
    private final Path dir;
    private final Path value;
    private int sent;

    Injector(String bootstrap, Path dir) throws IOException {
        this.bootstrap = bootstrap;
        this.dir = dir;
        this.value = dir.resolve("injected-value.txt");
        Files.writeString(value, "injected by fence chaos", StandardCharsets.UTF_8);
    }

    /**
     * Sends one record of each kind for keys picked with {@code random}.
     *
     * @param ledger what the workers did so far (for borrowed tokens and duplicates)
     * @return one line per record sent
     */
    List<String> inject(Random random, List<String> keys, WriterLedger ledger) throws IOException, InterruptedException {
        List<String> done = new ArrayList<>();
        String key = keys.get(random.nextInt(keys.size()));
        done.add(send("forged", key, FORGED_TOKEN + random.nextInt(1000), 1, 1 + random.nextInt(1_000_000), random));
        List<WriterLedger.Ack> acks = ledger.acks();
        // A key with an acknowledged write has a fence, so token 1 is STALE_TOKEN there whatever happened since.
        String staleKey = acks.isEmpty() ? keys.get(random.nextInt(keys.size())) : acks.get(random.nextInt(acks.size())).key();
        done.add(send("stale", staleKey, 1, 1, 0, random));
        List<WriterLedger.Acquired> acquired = ledger.acquired();
        if (!acquired.isEmpty()) {
            WriterLedger.Acquired other = acquired.get(random.nextInt(acquired.size()));
            String victim = keys.stream().filter(k -> !k.equals(other.key())).skip(random.nextInt(Math.max(1, keys.size() - 1)))
                    .findFirst().orElse(key);
            done.add(send("borrowed", victim, other.token(), 1, other.lease(), random));
        }
        if (!acks.isEmpty()) {
            WriterLedger.Ack ack = acks.get(random.nextInt(acks.size()));
            done.add(send("duplicate", ack.key(), ack.token(), ack.seq(), ack.lease(), random));
        }
        return done;
    }

    int sent() {
        return sent;
    }

    private String send(String kind, String key, long token, long seq, long lease, Random random)
            throws IOException, InterruptedException {
        boolean murmur2 = random.nextBoolean();
        List<String> command = new ArrayList<>(List.of("kcat", "-P", "-b", bootstrap, "-t", FenceTopics.INPUT, "-k", key,
                "-H", FenceHeaders.TOKEN + "=" + token, "-H", FenceHeaders.SEQ + "=" + seq, "-H",
                FenceHeaders.WRITER + "=kcat-" + kind));
        if (lease > 0) {
            command.addAll(List.of("-H", FenceHeaders.LEASE + "=" + lease));
        }
        if (murmur2) {
            command.addAll(List.of("-X", "partitioner=murmur2_random"));
        }
        command.add(value.toString());
        ChildProcess.run("kcat-" + kind, command, dir, dir.resolve("kcat.log"), Duration.ofSeconds(30));
        sent++;
        return kind + " " + key + " token=" + token + "." + seq + (lease > 0 ? " lease=" + lease : "")
                + (murmur2 ? "" : " (kcat's partitioner: re-routed)");
    }
}
