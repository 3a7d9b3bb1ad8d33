// Package writers is the queue in which bd-claim's writers of one SQLite
// database take turns, across processes and Stores: a lock file of the
// database's own, locked before BEGIN IMMEDIATE and left after COMMIT, so
// that the kernel wakes the next writer the moment the lock is free. On
// Linux it is an OFD lock (Queue); elsewhere there is no queue and writers
// wait in SQLite's busy handler.
package writers
