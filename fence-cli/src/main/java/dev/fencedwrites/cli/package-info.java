/**
 * The {@code fence} command line: {@link dev.fencedwrites.cli.FenceMain} is the one entry point, a picocli root
 * command whose subcommands run the demo, the local stack, the enforcer and the operator commands, with the stack options
 * they share ({@link dev.fencedwrites.cli.StackOptions}) declared once.
 */
package dev.fencedwrites.cli;
