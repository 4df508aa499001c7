/**
 * The billing scenario of {@code ./fence demo}: a worker paused past its lease, a second one taking over, and the
 * first one's stale write rejected ({@link dev.fencedwrites.demo.BillingScenario}).
 */
package dev.fencedwrites.demo;
