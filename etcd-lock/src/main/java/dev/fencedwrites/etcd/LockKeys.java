package dev.fencedwrites.etcd;

import java.nio.charset.StandardCharsets;

/**
 * The etcd key layout of a resource's lock, the one etcd's own lock uses ({@code concurrency.Mutex}
 * in the Go client, which the v3lock {@code Lock} RPC runs server-side) with the resource name
 * encoded: each waiter puts the key {@code <prefix><encoded resource>/<lease id in lower-case hex>}
 * under its lease, and the key with the oldest create revision under
 * {@code <prefix><encoded resource>/} holds the lock. A writer in any language that takes its lock
 * on these keys gets fencing tokens the enforcer can verify (docs/user/wire-protocol.md).
 *
 * <p>The resource is the Kafka record key (UTF-8). It is encoded the way Java's
 * {@code URLEncoder.encode(resource, UTF_8)} does: the bytes {@code a-z A-Z 0-9 . - * _} stay,
 * a space becomes {@code +}, and every other byte of the UTF-8 form becomes {@code %XX} (upper-case
 * hex). So a {@code /} in a name is {@code %2F}, and resource {@code a} never waits on {@code a/x}.
 */
public final class LockKeys {
    /** Default key prefix of the lock keys. */
    public static final String DEFAULT_PREFIX = "fenced-writes/locks/";
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private LockKeys() {
    }

    /**
     * The lock's name, {@code <prefix><encoded resource>}; its waiters' keys are under {@code name + "/"}.
     *
     * @param prefix   the lock prefix ({@code etcd.lock.prefix})
     * @param resource the resource id, UTF-8 bytes (the record key)
     */
    public static String name(String prefix, byte[] resource) {
        return prefix + encode(resource);
    }

    /** {@link #name(String, byte[])} of a resource id given as text. */
    public static String name(String prefix, String resource) {
        return name(prefix, resource.getBytes(StandardCharsets.UTF_8));
    }

    /** The key a waiter under {@code leaseId} puts: {@code <name>/<lease id in lower-case hex>}. */
    public static String key(String prefix, byte[] resource, long leaseId) {
        return name(prefix, resource) + "/" + Long.toHexString(leaseId);
    }

    /** The length of {@link #encode}'s result, without building it: one char per byte kept or space, three otherwise. */
    public static long encodedLength(byte[] resource) {
        long length = 0;
        for (byte b : resource) {
            int c = b & 0xff;
            length += kept(c) || c == ' ' ? 1 : 3;
        }
        return length;
    }

    private static boolean kept(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '*'
                || c == '_';
    }

    /** Encodes a resource id's UTF-8 bytes as described in the class comment. */
    public static String encode(byte[] resource) {
        StringBuilder out = new StringBuilder(resource.length + 8);
        for (byte b : resource) {
            int c = b & 0xff;
            if (kept(c)) {
                out.append((char) c);
            } else if (c == ' ') {
                out.append('+');
            } else {
                out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
            }
        }
        return out.toString();
    }
}
