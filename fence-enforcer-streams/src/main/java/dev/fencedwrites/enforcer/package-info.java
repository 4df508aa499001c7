/**
 * The fence enforcer, a Kafka Streams application: its configuration ({@link dev.fencedwrites.enforcer.FenceEnforcerConfig}),
 * its topology ({@link dev.fencedwrites.enforcer.FenceEnforcerTopology}, no I/O) and its main
 * ({@link dev.fencedwrites.enforcer.FenceEnforcerApp}). The processor and its store live in the module's {@code internal}
 * package, which no other module imports.
 */
package dev.fencedwrites.enforcer;
