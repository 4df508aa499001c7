package dev.fencedwrites.cli.verify;

/** A record's place in a topic: partition and offset. */
record Position(int partition, long offset) {
}
