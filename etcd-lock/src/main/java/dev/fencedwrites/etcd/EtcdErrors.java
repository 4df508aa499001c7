package dev.fencedwrites.etcd;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;

/**
 * Says what an etcd failure means for the user and which setting to check. jetcd hands gRPC's
 * {@code StatusRuntimeException} through; etcd's own reason is in the message of the cause chain
 * (e.g. "etcdserver: authentication failed, invalid user ID or password").
 */
public final class EtcdErrors {
    private EtcdErrors() {
    }

    public static String describe(Throwable error, EtcdSettings settings) {
        String chain = chain(error);
        if (chain.contains("authentication failed")) {
            return "etcd refused the credentials of user '" + settings.user() + "' (" + EtcdSettings.USER + ", "
                    + EtcdSettings.PASSWORD + "): " + chain;
        }
        if (chain.contains("user name is empty")) {
            return "etcd requires authentication; set " + EtcdSettings.USER + " and " + EtcdSettings.PASSWORD + ": " + chain;
        }
        if (chain.contains("permission denied")) {
            return "etcd user '" + settings.user() + "' may not use the lock prefix " + settings.lockPrefix()
                    + " (grant its role read/write on that prefix): " + chain;
        }
        if (chain.contains("SSLHandshakeException") || chain.contains("ssl exception") || chain.contains("PKIX")
                || chain.contains("NotSslRecordException")) {
            return "TLS with etcd failed; check " + EtcdSettings.TLS_CA_FILE + " (the CA of etcd's server certificate), "
                    + EtcdSettings.TLS_CERT_FILE + "/" + EtcdSettings.TLS_KEY_FILE
                    + " (when etcd requires client certificates) and whether "
                    + "etcd serves https: " + chain;
        }
        if (chain.contains("First received frame was not SETTINGS") || chain.contains("HTTP status code")) {
            return "the endpoint does not speak etcd's gRPC API; is " + endpoints(settings)
                    + " etcd's client URL (--advertise-client-urls)?: " + chain;
        }
        ErrorCode code = EtcdExceptionFactory.toEtcdException(error).getErrorCode();
        if (code == ErrorCode.DEADLINE_EXCEEDED) {
            return "etcd did not answer within " + EtcdSettings.REQUEST_TIMEOUT_MS + "=" + settings.requestTimeout().toMillis()
                    + " (is it overloaded, stopped, or without quorum?): " + chain;
        }
        if (code == ErrorCode.UNAVAILABLE) {
            String tlsHint = settings.tls()
                    ? ", and does it serve TLS as " + EtcdSettings.ENDPOINTS + " and the TLS settings say?"
                    : " (if etcd serves TLS, use https:// endpoints)";
            return "etcd is unreachable: is it running at " + endpoints(settings) + tlsHint + ": " + chain;
        }
        return chain;
    }

    private static String endpoints(EtcdSettings settings) {
        return EtcdSettings.ENDPOINTS + "=" + String.join(",", settings.endpoints());
    }

    /** The messages of the cause chain, outermost first, with the exception class where there is no message. */
    private static String chain(Throwable error) {
        StringBuilder text = new StringBuilder();
        for (Throwable t = error; t != null && text.length() < 2_000; t = t.getCause() == t ? null : t.getCause()) {
            if (text.length() > 0) {
                text.append(" <- ");
            }
            text.append(
                    t.getMessage() == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + t.getMessage());
        }
        return text.toString();
    }
}
