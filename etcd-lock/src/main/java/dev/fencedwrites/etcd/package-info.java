/**
 * The etcd side of the fencing-token contract: the lock key layout, connection settings, and the check that a lease held
 * a resource's lock at a revision ({@link dev.fencedwrites.etcd.LockHistory}). Source: etcd's v3 concurrency API (the
 * Mutex layout) and docs/concepts/verified-tokens.md.
 */
package dev.fencedwrites.etcd;
