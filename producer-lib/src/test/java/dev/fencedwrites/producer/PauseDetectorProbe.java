package dev.fencedwrites.producer;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** A JVM for {@link PauseDetectorIT} to freeze: prints the detector's largest recent stall and gauge every 100 ms. */
public final class PauseDetectorProbe {
    private PauseDetectorProbe() {
    }

    public static void main(String[] args) throws InterruptedException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (PauseDetector detector = PauseDetector.start(Duration.ofMillis(20), Duration.ofSeconds(2), registry)) {
            while (true) {
                double gauge = registry.get("fence.pause.largest.recent").gauge().value();
                System.out.println("STALL " + detector.largestRecentStall().toMillis() + " GAUGE " + gauge);
                System.out.flush();
                TimeUnit.MILLISECONDS.sleep(100);
            }
        }
    }
}
