package dev.fencedwrites.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The lock key layout: what other languages must reproduce (docs/user/wire-protocol.md). */
class LockKeysTest {

    @Test
    void keysFollowEtcdsMutexLayoutWithTheLeaseInLowerCaseHex() {
        assertThat(LockKeys.key("fenced-writes/locks/", "customer-42".getBytes(StandardCharsets.UTF_8), 0x694d7b1c2a3fL))
                .isEqualTo("fenced-writes/locks/customer-42/694d7b1c2a3f");
    }

    @Test
    void encodingKeepsTheUnreservedBytesAndEscapesEveryOther() {
        assertThat(LockKeys.encode("a/b c~d*e_f.g-h".getBytes(StandardCharsets.UTF_8))).isEqualTo("a%2Fb+c%7Ed*e_f.g-h");
        assertThat(LockKeys.encode("é€".getBytes(StandardCharsets.UTF_8))).isEqualTo("%C3%A9%E2%82%AC");
    }

    @Test
    void aResourceNeverSharesItsLockPrefixWithAnother() {
        String a = LockKeys.name("p/", "a".getBytes(StandardCharsets.UTF_8)) + "/";
        String nested = LockKeys.name("p/", "a/x".getBytes(StandardCharsets.UTF_8)) + "/";

        assertThat(nested).doesNotStartWith(a);
    }

    @Test
    void encodingEqualsJavasUrlEncoderOnRandomText() {
        Random random = new Random(14);
        for (int i = 0; i < 20_000; i++) {
            StringBuilder text = new StringBuilder();
            int length = 1 + random.nextInt(12);
            while (text.length() < length) {
                int codePoint = switch (random.nextInt(4)) {
                    case 0 -> 0x20 + random.nextInt(0x5f);
                    case 1 -> random.nextInt(0x800);
                    case 2 -> 0x800 + random.nextInt(0xd000 - 0x800);
                    default -> 0x10000 + random.nextInt(0x1000);
                };
                text.appendCodePoint(codePoint);
            }
            String resource = text.toString();
            assertThat(LockKeys.encode(resource.getBytes(StandardCharsets.UTF_8))).as(resource)
                    .isEqualTo(URLEncoder.encode(resource, StandardCharsets.UTF_8));
        }
    }
}
