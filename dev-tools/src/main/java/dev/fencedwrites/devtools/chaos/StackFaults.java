package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.EtcdCluster;
import java.util.Optional;

/** The service faults on a stack {@code fence chaos} started itself: signals to the processes it owns, restarts by it. */
final class StackFaults implements ServiceFaults {
    private final LocalStack stack;

    StackFaults(LocalStack stack) {
        this.stack = stack;
    }

    @Override
    public int instances(Fault fault) {
        return switch (fault) {
            case ENFORCER_KILL, ENFORCER_PAUSE -> stack.enforcerUrls().size();
            case CONNECT_KILL -> stack.connectUrls().size();
            case ETCD_PAUSE -> stack.etcdCluster().map(EtcdCluster::size).orElse(1);
            case BROKER_KILL -> stack.brokerCount() > 1 ? stack.brokerCount() : 0; // the only broker: nothing would be left
            default -> 0;
        };
    }

    @Override
    public void begin(Fault fault, int instance, long millis) throws Exception {
        Optional<EtcdCluster> etcd = stack.etcdCluster();
        switch (fault) {
            case ENFORCER_KILL -> stack.killEnforcer(instance);
            case ENFORCER_PAUSE -> stack.pauseEnforcer(instance);
            case CONNECT_KILL -> stack.killConnect(instance);
            case ETCD_PAUSE -> {
                if (etcd.isPresent()) {
                    etcd.get().signal(instance, "STOP");
                } else {
                    stack.pauseEtcd();
                }
            }
            case BROKER_KILL -> stack.killBroker(instance);
            default -> throw new IllegalArgumentException(fault.option() + " is not a fault of the stack's services");
        }
    }

    @Override
    public void end(Fault fault, int instance) throws Exception {
        Optional<EtcdCluster> etcd = stack.etcdCluster();
        switch (fault) {
            case ENFORCER_KILL -> stack.restartEnforcer(instance);
            case ENFORCER_PAUSE -> stack.resumeEnforcer(instance);
            case CONNECT_KILL -> stack.restartConnect(instance);
            case ETCD_PAUSE -> {
                if (etcd.isPresent()) {
                    etcd.get().signal(instance, "CONT");
                } else {
                    stack.resumeEtcd();
                }
            }
            case BROKER_KILL -> stack.restartBroker(instance);
            default -> throw new IllegalArgumentException(fault.option() + " is not a fault of the stack's services");
        }
    }
}
