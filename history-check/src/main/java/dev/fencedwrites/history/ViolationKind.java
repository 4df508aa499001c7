package dev.fencedwrites.history;

/** The ways a pipeline's history can break the fencing contract, as {@code fence verify} names them. */
public enum ViolationKind {
    /** An input record below the enforcer's committed offset has no decision on the accepted, rejected or markers topic. */
    NEVER_DECIDED("input record with no decision"),
    /** An input record has more than one decision (exactly_once_v2 forbids it; at_least_once may repeat an accepted copy). */
    DECIDED_TWICE("input record decided more than once"),
    /** The enforcer's decision differs from the decision rule replayed over the input log, or from the fence it reports. */
    UNLIKE_RULE("decision unlike the rule"),
    /** An accepted record no input record matches byte for byte: it was written to the accepted topic around the enforcer. */
    ACCEPTED_WITHOUT_INPUT("accepted record with no input record"),
    /** An accepted record the rule rejects against the key's previous accepted record: the accepted topic's fence fell. */
    FENCE_FELL("accepted (token, seq) fell"),
    /** A row whose fence is above every accepted write and marker of its key: written around the enforcer. */
    ROW_AHEAD("row ahead of the accepted topic"),
    /** A row whose fence is below the key's last accepted write or marker that the sink has already passed. */
    ROW_BEHIND("row behind the accepted topic"),
    /** A row at the right fence whose data columns or delete flag differ from the last accepted write. */
    ROW_DATA_DIFFERS("row data unlike the accepted write"),
    /** No row for a key whose accepted write or marker the sink has already passed. */
    ROW_MISSING("row missing");

    private final String title;

    ViolationKind(String title) {
        this.title = title;
    }

    /** A few words for the summary table. */
    public String title() {
        return title;
    }
}
