package dev.fencedwrites.producer;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;

/** Says what an etcd failure means for the user: which setting to check. */
final class EtcdErrors {
    private EtcdErrors() {
    }

    static String describe(Throwable error, EtcdSettings settings) {
        String message = String.valueOf(error.getMessage());
        if (error instanceof EtcdException etcd) {
            ErrorCode code = etcd.getErrorCode();
            if (message.contains("authentication failed") || code == ErrorCode.UNAUTHENTICATED) {
                return "etcd refused the credentials of user '" + settings.user() + "' (" + EtcdSettings.USER + ", " + EtcdSettings.PASSWORD
                        + "): " + message;
            }
            if (message.contains("user name is empty") || message.contains("user name not found")) {
                return "etcd requires authentication; set " + EtcdSettings.USER + " and " + EtcdSettings.PASSWORD + ": " + message;
            }
            if (code == ErrorCode.PERMISSION_DENIED) {
                return "etcd user '" + settings.user() + "' may not use the lock prefix " + settings.lockPrefix() + " (grant its role read/write on it): "
                        + message;
            }
            if (code == ErrorCode.UNAVAILABLE) {
                return "etcd is unreachable (is it running, and are " + EtcdSettings.ENDPOINTS + " and the TLS settings right?): " + message;
            }
            return code + ": " + message;
        }
        return String.valueOf(error);
    }
}
