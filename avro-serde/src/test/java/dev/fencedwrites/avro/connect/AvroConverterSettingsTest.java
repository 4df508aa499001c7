package dev.fencedwrites.avro.connect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.FakeSchemaRegistry;
import dev.fencedwrites.testing.FakeSchemaRegistry.Answer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.storage.Converter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The registry settings reach the converter the way a Connect worker hands them over: Connect's own
 * {@code Plugins.newConverter} strips the {@code value.converter.} prefix and calls configure.
 */
class AvroConverterSettingsTest {
    private static final int ID = 31;
    /** Classpath plugins only, found through ServiceLoader manifests (the plugin ships one); built once, as scanning is slow. */
    private static final Plugins PLUGINS = new Plugins(Map.of("plugin.discovery", "service_load"));

    @TempDir
    Path dir;
    private FakeSchemaRegistry server;

    @BeforeEach
    void registry() throws Exception {
        String body = new ObjectMapper().writeValueAsString(Map.of("schema", BillingSummary.getClassSchema().toString()));
        server = FakeSchemaRegistry.http(request -> request.path().equals("/schemas/ids/" + ID)
                ? Answer.ok(body)
                : Answer.error(404, 40403, "Schema not found"));
    }

    @AfterEach
    void stop() {
        server.close();
    }

    /** Each request's path and Authorization header, in order. */
    private List<String> seen() {
        return server.received().stream().map(r -> r.path() + " " + r.authorization()).toList();
    }

    private Converter converterFromWorkerConfig(Map<String, String> converterSettings) {
        Map<String, String> worker = new HashMap<>(Map.of(
                "bootstrap.servers", "127.0.0.1:9",
                "key.converter", "org.apache.kafka.connect.storage.StringConverter",
                "value.converter", AvroConverter.class.getName(),
                "offset.storage.file.filename", dir.resolve("offsets").toString()));
        converterSettings.forEach((key, value) -> worker.put("value.converter." + key, value));
        return PLUGINS.newConverter(new StandaloneConfig(worker), "value.converter",
                Plugins.ClassLoaderUsage.CURRENT_CLASSLOADER);
    }

    @Test
    void prefixedSettingsReachTheClient() {
        String url = server.url();
        Converter converter = converterFromWorkerConfig(Map.of(
                "schema.registry.url", "http://127.0.0.1:1," + url,
                "max.retries", "0",
                "basic.auth.credentials.source", "USER_INFO",
                "basic.auth.user.info", "connect:pw"));

        Struct struct = (Struct) converter.toConnectData("billing", wire(ID)).value();

        assertThat(struct.getString("customerId")).isEqualTo("customer-42");
        assertThat(seen()).singleElement().asString().startsWith("/schemas/ids/" + ID + " Basic ");
    }

    @Test
    void unsupportedSettingsFailTheConverterAtConfiguration() {
        assertThatThrownBy(() -> converterFromWorkerConfig(Map.of("schema.registry.url", "http://127.0.0.1:1",
                "basic.auth.credentials.source", "SASL_INHERIT")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("SASL_INHERIT");
        assertThatThrownBy(() -> converterFromWorkerConfig(Map.of("schema.registry.url", "http://127.0.0.1:1",
                "value.subject.name.strategy", "com.example.Custom")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("value.subject.name.strategy");
    }

    @Test
    void anUnknownIdFailsNamingIt() {
        Converter converter = converterFromWorkerConfig(Map.of("schema.registry.url", server.url()));

        assertThatThrownBy(() -> converter.toConnectData("billing", wire(404)))
                .isInstanceOf(DataException.class)
                .hasMessageContaining("schema id 404 not found");
    }

    private static byte[] wire(int id) {
        BillingSummary summary = BillingSummary.newBuilder().setCustomerId("customer-42").setBillingPeriod("2026-11")
                .setAmountMinor(1L)
                .setCurrency("EUR").setLineItems(1).setComputedAt(Instant.parse("2026-11-30T00:00:00Z")).setComputedBy("w")
                .build();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        out.writeBytes(ByteBuffer.allocate(4).putInt(id).array());
        try {
            BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
            new SpecificDatumWriter<BillingSummary>(BillingSummary.class).write(summary, encoder);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return out.toByteArray();
    }
}
