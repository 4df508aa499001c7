package dev.fencedwrites.failover;

import dev.fencedwrites.devtools.chaos.WriterLedger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The etcd lock's grant order in the writers' ledger: per key, tokens rise in the order the writers logged their grants,
 * but for the grants whose place in that order the log cannot tell.
 *
 * <ul>
 *   <li>A grant logged already lost (a writer frozen between etcd's grant and producer-lib's return logs it late, with its
 *       loss) is left out.</li>
 *   <li>A grant logged after a higher token's may still be earlier in etcd: the response of the transaction that found its
 *       key the oldest can arrive late (an etcd leader killed under it), its lease expire meanwhile and the other writer
 *       be granted the lock; the late grant's lease is reported lost later. Such a grant never writes (producer-lib's local
 *       deadline comes before etcd's expiry, and every send checks it), so a lower token logged later is a problem unless
 *       its lease was lost and wrote nothing: otherwise its key would have been older than the other holder's.</li>
 *   <li>Equal tokens always are: two keys cannot both be the oldest at one revision.</li>
 * </ul>
 *
 * @param problems one line per grant out of order
 * @param leftOut  grants left out as logged already lost
 */
record GrantOrder(List<String> problems, int leftOut) {

    static GrantOrder check(WriterLedger ledger) {
        Set<Long> lostWhenLogged = new HashSet<>();
        ledger.acquired().forEach(a -> ledger.lost().stream()
                .filter(lost -> lost.lease() == a.lease() && lost.millis() <= a.millis()).findAny()
                .ifPresent(lost -> lostWhenLogged.add(a.lease())));
        Map<String, List<WriterLedger.Acquired>> byKey = new HashMap<>();
        ledger.acquired().stream().filter(a -> !lostWhenLogged.contains(a.lease()))
                .forEach(a -> byKey.computeIfAbsent(a.key(), k -> new ArrayList<>()).add(a));
        Set<Long> lateGrant = new HashSet<>();
        ledger.lost().forEach(lost -> lateGrant.add(lost.lease()));
        ledger.acks().forEach(ack -> lateGrant.remove(ack.lease()));
        List<String> problems = new ArrayList<>();
        byKey.forEach((key, grants) -> {
            grants.sort(Comparator.comparingLong(WriterLedger.Acquired::millis));
            WriterLedger.Acquired highest = null;
            for (WriterLedger.Acquired grant : grants) {
                if (highest != null && (grant.token() == highest.token()
                        || grant.token() < highest.token() && !lateGrant.contains(grant.lease()))) {
                    problems.add(key + ": " + grant + " after " + highest);
                }
                highest = highest == null || grant.token() > highest.token() ? grant : highest;
            }
        });
        return new GrantOrder(problems, lostWhenLogged.size());
    }
}
