#!/usr/bin/env bash
# Creates the pipeline's topics (input, accepted, rejected, markers) as `./fence up` does (LocalStack.createTopics): 3 partitions each,
# one replica (a single broker), and room on the rejected topic for the rejection headers on top
# of the largest input record (the broker default 1048588 bytes + 64 KiB). Safe to run again.
# Usage: create-topics.sh BOOTSTRAP
set -euo pipefail
bootstrap=${1:?usage: create-topics.sh BOOTSTRAP}
topics=/opt/kafka/bin/kafka-topics.sh

create() {
  "$topics" --bootstrap-server "$bootstrap" --create --if-not-exists --partitions 3 --replication-factor 1 --topic "$@"
}

create fenced-writes
create fenced-writes-accepted
create fenced-writes-rejected --config max.message.bytes=1114124
create fenced-writes-markers
"$topics" --bootstrap-server "$bootstrap" --describe --topic fenced-writes,fenced-writes-accepted,fenced-writes-rejected,fenced-writes-markers
