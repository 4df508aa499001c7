package dev.fencedwrites.sink.internal;

/**
 * A failure that may pass on retry, such as the schema registry being unreachable: the sink task
 * retries the batch ({@code max.retries}, {@code retry.backoff.ms}) as it does a transient database error.
 */
public final class TransientFailure extends RuntimeException {
    TransientFailure(Throwable cause) {
        super(cause.getMessage(), cause);
    }
}
