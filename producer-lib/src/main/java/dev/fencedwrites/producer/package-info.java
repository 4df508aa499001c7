/**
 * The writer side: an etcd lease and lock that yield a fencing token ({@link dev.fencedwrites.producer.FencingLeaseClient}),
 * and a Kafka producer that stamps every record with it ({@link dev.fencedwrites.producer.FencedProducer}).
 */
package dev.fencedwrites.producer;
