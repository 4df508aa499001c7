/**
 * The wire contract of fenced-writes, on kafka-clients alone: the fence headers and their codec ({@link
 * dev.fencedwrites.contract.FenceHeaders}), the parsed stamp ({@link dev.fencedwrites.contract.FenceStamp}), the decision
 * rule ({@link dev.fencedwrites.contract.FenceRule}), the rejection reasons and the default topics. Source of the rules:
 * the README, "The wire contract (v1)" and "The decision rule".
 */
package dev.fencedwrites.contract;
