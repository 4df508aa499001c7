/**
 * Real services on loopback, for tests, the local stack, the demo and the bench: each runs as its own process
 * on free ports of 127.0.0.1 and is awaited until it really answers.
 *
 * <p>Entry points, each started by a static factory and stopped with {@code close()}:
 * {@link dev.fencedwrites.services.KafkaBroker} (one KRaft broker + controller),
 * {@link dev.fencedwrites.services.EtcdNode} (one member, plain or TLS),
 * {@link dev.fencedwrites.services.EtcdCluster} (several members that tests kill and restart),
 * {@link dev.fencedwrites.services.PostgresServer} (zonky's embedded PostgreSQL),
 * {@link dev.fencedwrites.services.SchemaRegistryServer} (Apicurio Registry's Confluent API),
 * {@link dev.fencedwrites.services.ConnectWorker} (a standalone worker with the caller's plugin path and connectors) and
 * {@link dev.fencedwrites.services.EnforcerProcess} (the enforcer, started by class name from the caller's class path).
 * A started child process is a {@link dev.fencedwrites.services.Service}: its {@link dev.fencedwrites.services.ChildProcess}
 * (signals, log tail) and the address clients use. Helpers for callers that drive processes themselves:
 * {@link dev.fencedwrites.services.Jvm} (child JVM command lines), {@link dev.fencedwrites.services.Await} (readiness
 * polling that fails early when the process dies), {@link dev.fencedwrites.services.Http},
 * {@link dev.fencedwrites.services.FreePorts} and {@link dev.fencedwrites.services.Log4j2Config}.
 *
 * <p>This module knows neither the enforcer nor the sink at compile time; JUnit 5 extensions over it are in
 * test-support ({@code dev.fencedwrites.testing}).
 */
package dev.fencedwrites.services;
