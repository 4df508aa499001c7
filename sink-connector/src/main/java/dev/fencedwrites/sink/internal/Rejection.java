package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import org.apache.kafka.connect.sink.SinkRecord;

/**
 * A record the sink refused, for the dead-letter topic.
 *
 * @param record  the record as the task received it
 * @param reason  {@code fence.rejected.reason}
 * @param highest the key's stored fence ({@code fence.rejected.highest}), or {@code null} when there is none
 * @param detail  why, for logs and the error reported with the record
 */
public record Rejection(SinkRecord record, RejectionReason reason, Fence highest, String detail) {
}
