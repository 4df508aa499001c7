package dev.fencedwrites.localstack;

import java.util.List;

/**
 * The SCRAM users of a secured {@link LocalStack} ({@link LocalStackBuilder#secured()}), each with exactly the ACLs
 * {@link FenceAcls} lists for its role; {@code admin} ({@code KafkaSecurity.ADMIN}) is the broker's only super user.
 */
public final class StackUsers {
    /** The enforcer's principal: {@link FenceAcls#enforcer}. */
    public static final String ENFORCER = "enforcer";
    /** The Connect worker's principal, for every connector the stack runs: {@link FenceAcls#sinkConnector}. */
    public static final String CONNECT = "connect";
    /** A worker's principal (producer-lib): {@link FenceAcls#writer}. */
    public static final String WRITER = "writer";
    /** The CLI's principal ({@code produce}, {@code rejected}, {@code consume}): {@link FenceAcls#operator}. */
    public static final String OPERATOR = "operator";
    /** Every user but the super user. */
    public static final List<String> ALL = List.of(ENFORCER, CONNECT, WRITER, OPERATOR);

    private StackUsers() {
    }
}
