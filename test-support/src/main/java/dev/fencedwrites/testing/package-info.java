/**
 * Test fixtures, used by every module at test scope only.
 *
 * <p>Real services as JUnit 5 extensions over local-services ({@code dev.fencedwrites.services}), registered with
 * {@code @RegisterExtension} on a static field (one service per test class) or an instance field (one per test):
 * {@link dev.fencedwrites.testing.EtcdNodeExtension}, {@link dev.fencedwrites.testing.EtcdClusterExtension},
 * {@link dev.fencedwrites.testing.KafkaBrokerExtension}, {@link dev.fencedwrites.testing.PostgresExtension},
 * {@link dev.fencedwrites.testing.SchemaRegistryExtension} and {@link dev.fencedwrites.testing.ConnectWorkerExtension};
 * {@link dev.fencedwrites.testing.SharedServiceExtension} shares one service among the test classes of a run.
 * Also {@link dev.fencedwrites.testing.ShippedSchemas} (real output against the files of the schemas module) and the one
 * {@code log4j2-test.properties} on every test class path.
 */
package dev.fencedwrites.testing;
