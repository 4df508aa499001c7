/**
 * The history checker: {@link dev.fencedwrites.history.PipelineVerifier#run} reads what a pipeline wrote (the input,
 * accepted, rejected and markers topics, and the sink's table when given) and replays the decision rule over the input
 * in offset order, reporting each record decided other than the rule decides it ({@link dev.fencedwrites.history.Findings}).
 * The rule itself is {@link dev.fencedwrites.contract.FenceRule}; what each violation means is in docs/tools/verify.md.
 */
package dev.fencedwrites.history;
