package dev.fencedwrites.devtools.chaos;

/**
 * Where {@code fence chaos}'s nemesis lands the faults that hit the pipeline's services rather than the writers:
 * the enforcer, the Connect worker, etcd and the brokers. A fault has a beginning (SIGSTOP, SIGKILL) and an end (SIGCONT, a
 * restart that returns once the instance serves again).
 */
interface ServiceFaults {
    /** How many instances {@code fault} can hit (enforcers, Connect workers, etcd members, brokers); 0 when it cannot. */
    int instances(Fault fault);

    /** Begins {@code fault} on {@code instance}, meant to last about {@code millis} ms. */
    void begin(Fault fault, int instance, long millis) throws Exception;

    /** Ends it: lets the instance run again, or restarts it and returns once it is back. */
    void end(Fault fault, int instance) throws Exception;
}
