/**
 * The wire contract of fenced-writes, on kafka-clients alone: the fence headers and their codec ({@link
 * dev.fencedwrites.contract.FenceHeaders}), the parsed stamp ({@link dev.fencedwrites.contract.FenceStamp}), the decision
 * rule ({@link dev.fencedwrites.contract.FenceRule}), the rejection reasons and the default topics. Source of the rules:
 * docs/user/wire-protocol.md and docs/concepts/decision-rule.md.
 */
package dev.fencedwrites.contract;
