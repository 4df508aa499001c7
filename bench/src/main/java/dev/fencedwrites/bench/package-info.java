/** {@code ./fence bench}: each cost of fencing measured beside its unfenced baseline in the same run. */
package dev.fencedwrites.bench;
