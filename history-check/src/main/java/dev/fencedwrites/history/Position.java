package dev.fencedwrites.history;

/** A record's place in a topic: partition and offset. */
record Position(int partition, long offset) {
}
