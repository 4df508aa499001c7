package dev.fencedwrites.sink.internal;

import dev.fencedwrites.demo.BillingSummary;
import java.util.Date;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;

/** {@code BillingSummary} as the Connect Struct that {@code AvroConverter} makes of it, for table tests. */
final class BillingStructs {
    static final Schema SCHEMA = SchemaBuilder.struct().name("dev.fencedwrites.demo.BillingSummary")
            .field("customerId", Schema.STRING_SCHEMA)
            .field("billingPeriod", Schema.STRING_SCHEMA)
            .field("amountMinor", Schema.INT64_SCHEMA)
            .field("currency", Schema.STRING_SCHEMA)
            .field("lineItems", Schema.INT32_SCHEMA)
            .field("computedAt", Timestamp.SCHEMA)
            .field("computedBy", Schema.STRING_SCHEMA)
            .build();

    private BillingStructs() {
    }

    /** The Struct of {@code summary}, or {@code null} for {@code null} (a delete). */
    static Struct struct(BillingSummary summary) {
        if (summary == null) {
            return null;
        }
        return new Struct(SCHEMA).put("customerId", summary.getCustomerId()).put("billingPeriod", summary.getBillingPeriod())
                .put("amountMinor", summary.getAmountMinor()).put("currency", summary.getCurrency())
                .put("lineItems", summary.getLineItems())
                .put("computedAt", Date.from(summary.getComputedAt())).put("computedBy", summary.getComputedBy());
    }
}
