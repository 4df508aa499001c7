/**
 * The whole fenced-writes pipeline on loopback, from the services of {@code dev.fencedwrites.services}: what
 * {@code ./fence up} and {@code ./fence demo} start ({@link dev.fencedwrites.localstack.LocalStack}), with the
 * connectors its caller names ({@link dev.fencedwrites.localstack.BillingConnectors} is the billing preset).
 */
package dev.fencedwrites.localstack;
