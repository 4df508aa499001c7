package dev.fencedwrites.services;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The TLS material of a secured {@link KafkaBroker}, made in process at start: a CA of its own, the broker's key and
 * certificate signed by it (subject alternative names {@code localhost} and {@code 127.0.0.1}, so clients verify the host
 * as Kafka's default {@code ssl.endpoint.identification.algorithm=https} asks), and a trust store holding only the CA.
 * Keys are EC P-256; stores are PKCS12 with one password; certificates are valid for 30 days.
 *
 * @param caPem      the CA certificate in PEM, for non-Java clients (kcat's {@code ssl.ca.location})
 * @param keystore   the broker's key store ({@code ssl.keystore.location}): its key, certificate and the CA
 * @param truststore the clients' trust store ({@code ssl.truststore.location})
 * @param password   the password of both stores and of the broker's key
 */
public record KafkaCertificates(Path caPem, Path keystore, Path truststore, String password) {
    private static final Duration VALIDITY = Duration.ofDays(30);
    private static final String SIGNATURE = "SHA256withECDSA";

    /**
     * Makes a CA, the broker's certificate and the trust store in {@code dir} (created if missing).
     *
     * @throws IOException if a file cannot be written
     */
    public static KafkaCertificates create(Path dir, String password) throws IOException {
        Files.createDirectories(dir);
        try {
            KeyPair caKeys = keyPair();
            X500Name caName = new X500Name("CN=fenced-writes local CA");
            X509Certificate ca = sign(new JcaX509v3CertificateBuilder(caName, serial(), from(), until(), caName,
                    caKeys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(true))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign)), caKeys);
            KeyPair brokerKeys = keyPair();
            X509Certificate broker = sign(brokerCertificate(caName, brokerKeys.getPublic()), caKeys);
            Path caPem = Files.writeString(dir.resolve("ca.crt"), pem(ca), StandardCharsets.US_ASCII);
            KeyStore keys = emptyStore();
            keys.setKeyEntry("broker", brokerKeys.getPrivate(), password.toCharArray(), new Certificate[]{broker, ca});
            KeyStore trust = emptyStore();
            trust.setCertificateEntry("ca", ca);
            return new KafkaCertificates(caPem, store(keys, dir.resolve("broker.p12"), password),
                    store(trust, dir.resolve("truststore.p12"), password), password);
        } catch (GeneralSecurityException | OperatorCreationException e) {
            throw new IllegalStateException("cannot make the broker's certificates: " + e.getMessage(), e);
        }
    }

    private static X509v3CertificateBuilder brokerCertificate(X500Name caName, PublicKey key) throws IOException {
        return new JcaX509v3CertificateBuilder(caName, serial(), from(), until(), new X500Name("CN=localhost"), key)
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyAgreement))
                .addExtension(Extension.extendedKeyUsage, false,
                        new ExtendedKeyUsage(new KeyPurposeId[]{KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}))
                .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[]{
                        new GeneralName(GeneralName.dNSName, "localhost"),
                        new GeneralName(GeneralName.iPAddress, "127.0.0.1")}));
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, KeyPair issuer)
            throws OperatorCreationException, GeneralSecurityException {
        return new JcaX509CertificateConverter()
                .getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(issuer.getPrivate())));
    }

    private static KeyPair keyPair() throws GeneralSecurityException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        return generator.generateKeyPair();
    }

    private static BigInteger serial() {
        return new BigInteger(64, new SecureRandom());
    }

    private static Date from() {
        // An hour back, so a clock a little behind still accepts the certificate.
        return Date.from(Instant.now().minus(Duration.ofHours(1)));
    }

    private static Date until() {
        return Date.from(Instant.now().plus(VALIDITY));
    }

    private static KeyStore emptyStore() throws GeneralSecurityException, IOException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        return store;
    }

    private static Path store(KeyStore store, Path file, String password) throws GeneralSecurityException, IOException {
        try (OutputStream out = Files.newOutputStream(file)) {
            store.store(out, password.toCharArray());
        }
        return file;
    }

    private static String pem(X509Certificate certificate) throws GeneralSecurityException {
        return "-----BEGIN CERTIFICATE-----\n"
                + Base64.getMimeEncoder(64, new byte[]{'\n'}).encodeToString(certificate.getEncoded())
                + "\n-----END CERTIFICATE-----\n";
    }
}
