package dev.fencedwrites.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;

/**
 * Resource names for the tests that compare another language's lock-key encoding with LockKeys': given names and byte
 * strings, then random names up to 2 000 (from an alphabet with '/', '~', '*', '+', '%', control characters and text
 * beyond ASCII) and 200 random byte strings that are mostly not UTF-8. The same seed gives the same corpus.
 *
 * @param names the names, as text
 * @param bytes the raw names
 */
record LockNameCorpus(List<String> names, List<byte[]> bytes) {
    private static final int[] CODE_POINTS = "abcXYZ019 /~*+%.-_:?&=#\u0000\u001f\u007fÄöüßéñçΩж漢字🙂𝄞".codePoints().toArray();

    /** The given names and byte strings first, then the random ones drawn with {@code seed}. */
    static LockNameCorpus generate(long seed, List<String> givenNames, List<byte[]> givenBytes) {
        List<String> names = new ArrayList<>(givenNames);
        Random random = new Random(seed);
        while (names.size() < 2_000) {
            StringBuilder name = new StringBuilder();
            for (int i = random.nextInt(24); i > 0; i--) {
                name.appendCodePoint(CODE_POINTS[random.nextInt(CODE_POINTS.length)]);
            }
            names.add(name.toString());
        }
        List<byte[]> bytes = new ArrayList<>(givenBytes);
        for (int i = 0; i < 200; i++) {
            byte[] raw = new byte[random.nextInt(16)];
            random.nextBytes(raw);
            bytes.add(raw);
        }
        return new LockNameCorpus(List.copyOf(names), List.copyOf(bytes));
    }

    /** What the encode scripts read: {@code {"strings": [names], "bytes": [each byte string in Base64]}}. */
    ObjectNode input() {
        ObjectNode input = ExternalCommand.JSON.createObjectNode();
        names.forEach(input.putArray("strings")::add);
        ArrayNode encoded = input.putArray("bytes");
        bytes.forEach(b -> encoded.add(Base64.getEncoder().encodeToString(b)));
        return input;
    }
}
