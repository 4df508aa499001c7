/**
 * The enforcer's processor and what it needs, used only by this module: the decision per record, the fence store's
 * serde, the rejected copies, the token verifier against etcd, the production exception handler and the metrics.
 */
package dev.fencedwrites.enforcer.internal;
